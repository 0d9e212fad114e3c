// Support code emitted verbatim at the top of every expansion of the wire types.
//
// It is kept here as a real Rust file (included as text by the generator) so the generated
// module is self-contained: the expansion compiles with nothing but serde, serde_json (with
// `raw_value`) and serde_path_to_error. Keep it small; it is on the decode hot path.

/// A JSON-RPC request id. Responses echo it with the same JSON type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// `null` (allowed by JSON-RPC, discouraged).
    Null,
    /// An integer id.
    Number(i64),
    /// A string id.
    Str(String),
}

impl ::serde::Serialize for RequestId {
    fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Null => serializer.serialize_unit(),
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::Str(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> ::serde::Deserialize<'de> for RequestId {
    fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> ::serde::de::Visitor<'de> for V {
            type Value = RequestId;
            fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str("a JSON-RPC id (string, integer or null)")
            }
            fn visit_unit<E: ::serde::de::Error>(self) -> Result<RequestId, E> {
                Ok(RequestId::Null)
            }
            fn visit_none<E: ::serde::de::Error>(self) -> Result<RequestId, E> {
                Ok(RequestId::Null)
            }
            fn visit_i64<E: ::serde::de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: ::serde::de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("request id out of range for a 64-bit integer"))
            }
            fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::Str(v.to_owned()))
            }
            fn visit_string<E: ::serde::de::Error>(self, v: String) -> Result<RequestId, E> {
                Ok(RequestId::Str(v))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl ::std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
        match self {
            RequestId::Null => f.write_str("null"),
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::Str(s) => write!(f, "{s:?}"),
        }
    }
}

#[cfg(feature = "schemars")]
impl ::schemars::JsonSchema for RequestId {
    fn schema_name() -> String {
        "RequestId".to_owned()
    }

    fn json_schema(_: &mut ::schemars::r#gen::SchemaGenerator) -> ::schemars::schema::Schema {
        // From the variants above: `Null`, `Number(i64)`, `Str(String)`.
        ::serde_json::from_value(::serde_json::json!({
            "anyOf": [
                { "title": "Null", "type": "null" },
                { "title": "Number", "type": "integer", "format": "int64" },
                { "title": "Str", "type": "string" }
            ]
        }))
        .expect("a well-formed schema")
    }
}

/// A member whose absence and `null` mean different things (message upserts: an omitted
/// `content` leaves the content as it is, `null` clears it, a value replaces it).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Patch<T> {
    /// The member is absent: leave the current value.
    #[default]
    Absent,
    /// The member is `null`: clear the current value.
    Null,
    /// The member has a value: replace the current value.
    Value(T),
}

impl<T> Patch<T> {
    /// `true` when the member was absent (it is then not serialised).
    pub fn is_absent(&self) -> bool {
        matches!(self, Patch::Absent)
    }

    /// The value, if the member carried one.
    pub fn as_value(&self) -> Option<&T> {
        match self {
            Patch::Value(v) => Some(v),
            _ => None,
        }
    }
}

/// A value sets the member (`Patch::Value`); the generated setters of `Patch<T>` members take
/// `impl Into<Patch<T>>`, so `Patch::Null` (clear) and `Patch::Absent` pass through as they are.
impl<T> From<T> for Patch<T> {
    fn from(value: T) -> Self {
        Patch::Value(value)
    }
}

/// What the generated setters of optional members (`Option<T>`) take: a `T` (a `&str` for a
/// `String`) sets the member, an `Option<T>` sets or clears it.
pub trait IntoOption<T> {
    /// The value as the member's `Option`.
    fn into_option(self) -> Option<T>;
}

impl<T> IntoOption<T> for Option<T> {
    fn into_option(self) -> Option<T> {
        self
    }
}

impl<T> IntoOption<T> for T {
    fn into_option(self) -> Option<T> {
        Some(self)
    }
}

impl IntoOption<String> for &str {
    fn into_option(self) -> Option<String> {
        Some(self.to_owned())
    }
}

impl IntoOption<String> for &String {
    fn into_option(self) -> Option<String> {
        Some(self.clone())
    }
}

impl<T: ::serde::Serialize> ::serde::Serialize for Patch<T> {
    fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Patch::Absent | Patch::Null => serializer.serialize_none(),
            Patch::Value(v) => v.serialize(serializer),
        }
    }
}

impl<'de, T: ::serde::Deserialize<'de>> ::serde::Deserialize<'de> for Patch<T> {
    fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            None => Patch::Null,
            Some(v) => Patch::Value(v),
        })
    }
}

/// Absent and `null` are both "no value" to a schema; the difference is in the member being
/// optional (`default`), which the field says, not the type.
#[cfg(feature = "schemars")]
impl<T: ::schemars::JsonSchema> ::schemars::JsonSchema for Patch<T> {
    fn is_referenceable() -> bool {
        false
    }

    fn schema_name() -> String {
        format!("Nullable_{}", T::schema_name())
    }

    fn json_schema(generator: &mut ::schemars::r#gen::SchemaGenerator) -> ::schemars::schema::Schema {
        <Option<T> as ::schemars::JsonSchema>::json_schema(generator)
    }
}

/// The raw object of a tagged-union member whose tag this version does not know (R-WIRE-3).
/// It keeps every member, the tag included, as JSON text, and re-encodes unchanged: the tag
/// first, then the other members in the order they came, each value's text as it came.
///
/// Kept as text rather than as a `serde_json::Map`: a member this version does not know is
/// read to be passed on (to an app, another language, a store), and building a tree of it cost
/// a hashed map entry and allocations per member and per string; as text it is one buffer plus
/// one small allocation per member while it is read, and it is what the FFI hands over anyway.
/// [`Unknown::object`] parses it when asked.
#[derive(Clone)]
pub struct Unknown(Box<::serde_json::value::RawValue>);

impl Unknown {
    /// An unknown member from its JSON text, which must be an object.
    pub fn from_json(json: &str) -> Result<Unknown, ::serde_json::Error> {
        let raw = ::serde_json::value::RawValue::from_string(json.trim().to_owned())?;
        if raw.get().starts_with('{') {
            Ok(Unknown(raw))
        } else {
            Err(<::serde_json::Error as ::serde::de::Error>::custom("an unknown member is a JSON object"))
        }
    }

    /// Its JSON text (an object).
    pub fn json(&self) -> &str {
        self.0.get()
    }

    /// Its members, parsed.
    pub fn object(&self) -> ::serde_json::Map<String, ::serde_json::Value> {
        ::serde_json::from_str(self.0.get()).unwrap_or_default()
    }

    /// One member's value, parsed.
    pub fn get(&self, member: &str) -> Option<::serde_json::Value> {
        let raw = self.members().into_iter().rev().find(|(k, _)| k == member)?.1;
        ::serde_json::from_str(raw.get()).ok()
    }

    /// The value of the tag member (`sessionUpdate`, `state`, `type`, …), when it is a string
    /// (one written with escapes reads as absent: tags are identifiers). A repeated tag reads
    /// as its first occurrence, as decoding does.
    pub fn tag<'a>(&'a self, tag_name: &str) -> Option<&'a str> {
        let raw = self.members().into_iter().find(|(k, _)| k == tag_name)?.1.get();
        let text = raw.strip_prefix('"')?.strip_suffix('"')?;
        (!text.contains('\\')).then_some(text)
    }

    /// The members, in order, each with its value's text.
    fn members(&self) -> Vec<(::std::borrow::Cow<'_, str>, &::serde_json::value::RawValue)> {
        struct Members;
        impl<'de> ::serde::de::Visitor<'de> for Members {
            type Value = Vec<(::std::borrow::Cow<'de, str>, &'de ::serde_json::value::RawValue)>;
            fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<__de::Str<'de>>()? {
                    out.push((key.0, map.next_value()?));
                }
                Ok(out)
            }
        }
        let mut de = ::serde_json::Deserializer::from_str(self.0.get());
        ::serde::Deserializer::deserialize_map(&mut de, Members).unwrap_or_default()
    }
}

impl Default for Unknown {
    fn default() -> Self {
        Unknown::from(::serde_json::Map::new())
    }
}

impl ::std::fmt::Debug for Unknown {
    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
        f.debug_tuple("Unknown").field(&self.0.get()).finish()
    }
}

/// Equal when they hold the same members with equal values (text that differs only in
/// spacing or member order is equal).
impl PartialEq for Unknown {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get() || self.object() == other.object()
    }
}

impl From<::serde_json::Map<String, ::serde_json::Value>> for Unknown {
    fn from(object: ::serde_json::Map<String, ::serde_json::Value>) -> Self {
        match ::serde_json::value::to_raw_value(&object) {
            Ok(raw) => Unknown(raw),
            Err(e) => unreachable!("a JSON map always serialises: {e}"),
        }
    }
}

impl ::serde::Serialize for Unknown {
    fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Types whose members can be written into a map that is already open, so that a tagged union
/// writes its tag and then its variant's members into one JSON object.
pub trait SerializeFields {
    /// Writes this value's members into `map`.
    fn serialize_fields<M: ::serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error>;
}

impl SerializeFields for Unknown {
    fn serialize_fields<M: ::serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        for (k, v) in self.members() {
            map.serialize_entry(&k, v)?;
        }
        Ok(())
    }
}

/// Decoding support for tagged unions. Not part of the API.
#[doc(hidden)]
pub mod __de {
    use ::serde::de::{DeserializeSeed, Error as _, IntoDeserializer, MapAccess};
    use ::serde::Deserialize as _;
    use ::std::borrow::Cow;

    /// A map key or tag value, borrowed from the input when it has no escapes.
    pub struct Str<'de>(pub Cow<'de, str>);

    impl<'de> ::serde::Deserialize<'de> for Str<'de> {
        fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> ::serde::de::Visitor<'de> for V {
                type Value = Str<'de>;
                fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E: ::serde::de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                    Ok(Str(Cow::Borrowed(v)))
                }
                fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                    Ok(Str(Cow::Owned(v.to_owned())))
                }
                fn visit_string<E: ::serde::de::Error>(self, v: String) -> Result<Str<'de>, E> {
                    Ok(Str(Cow::Owned(v)))
                }
            }
            deserializer.deserialize_str(V)
        }
    }

    /// A member read before the tag: its key, and its value held as the JSON text serde_json
    /// lends (no tree is built; see [`Held`]), to be decoded once the tag is known.
    pub type Buffered<'de> = (Cow<'de, str>, Held<'de>);

    /// Members read before the tag (buffered), followed by the rest of the object.
    /// In the common case the tag comes first and nothing is buffered.
    pub struct Chain<'de, A> {
        buffered: ::std::vec::IntoIter<Buffered<'de>>,
        pending: Option<Buffered<'de>>,
        rest: A,
    }

    impl<'de, A> Chain<'de, A> {
        pub fn new(buffered: Vec<Buffered<'de>>, rest: A) -> Self {
            Chain { buffered: buffered.into_iter(), pending: None, rest }
        }
    }

    impl<'de, A: MapAccess<'de>> MapAccess<'de> for Chain<'de, A> {
        type Error = A::Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
            if let Some((k, v)) = self.buffered.next() {
                let key = match &k {
                    Cow::Borrowed(k) => seed.deserialize(::serde::de::value::BorrowedStrDeserializer::new(k)),
                    Cow::Owned(k) => seed.deserialize(k.as_str().into_deserializer()),
                };
                self.pending = Some((k, v));
                return key.map(Some);
            }
            self.rest.next_key_seed(seed)
        }

        fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
            let Some((k, v)) = self.pending.take() else {
                return self.rest.next_value_seed(seed);
            };
            let value = match v {
                // Text lent from the input: decoded in place, borrowing from the input as the
                // member would have.
                Held::Text(Cow::Borrowed(text)) => {
                    let mut de = ::serde_json::Deserializer::from_str(text);
                    seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v))
                }
                Held::Text(Cow::Owned(text)) => {
                    ::serde_json::from_str::<::serde_json::Value>(&text).and_then(|tree| seed.deserialize(tree))
                }
                Held::Value(tree) => seed.deserialize(tree),
            };
            // A replayed member is not on the caller's error path: name it in the message.
            value.map_err(|e| A::Error::custom(format_args!("member `{k}`: {e}")))
        }
    }

    /// Reads members until `tag` is found; returns the tag value and the members seen before it.
    pub fn read_tag<'de, A: MapAccess<'de>>(
        map: &mut A,
        tag: &'static str,
    ) -> Result<(Cow<'de, str>, Vec<Buffered<'de>>), A::Error> {
        let mut buffered = Vec::new();
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if key.0 == tag {
                let value: Str<'de> = map.next_value()?;
                return Ok((value.0, buffered));
            }
            buffered.push((key.0, map.next_value::<Held<'de>>()?));
        }
        Err(A::Error::missing_field(tag))
    }

    /// Decodes the body of a variant from the members after (and buffered before) the tag.
    pub fn body<'de, T: ::serde::Deserialize<'de>, A: MapAccess<'de>>(buffered: Vec<Buffered<'de>>, rest: A) -> Result<T, A::Error> {
        T::deserialize(::serde::de::value::MapAccessDeserializer::new(Chain::new(buffered, rest)))
    }

    /// The number of items of an array member, for `minItems`; `null` and absent have none to count.
    pub trait Items {
        fn items(&self) -> Option<usize>;
    }

    impl<T> Items for Vec<T> {
        fn items(&self) -> Option<usize> {
            Some(self.len())
        }
    }

    impl<T> Items for Option<Vec<T>> {
        fn items(&self) -> Option<usize> {
            self.as_ref().map(Vec::len)
        }
    }

    impl<T> Items for super::Patch<Vec<T>> {
        fn items(&self) -> Option<usize> {
            self.as_value().map(Vec::len)
        }
    }

    /// `deserialize_with` for array members with `minItems` (typify drops the keyword).
    pub fn min_items<'de, D, T, const N: usize>(deserializer: D) -> Result<T, D::Error>
    where
        D: ::serde::Deserializer<'de>,
        T: ::serde::Deserialize<'de> + Items,
    {
        let value = T::deserialize(deserializer)?;
        match value.items() {
            Some(n) if n < N => Err(D::Error::invalid_length(n, &MinItems(N))),
            _ => Ok(value),
        }
    }

    struct MinItems(usize);

    impl ::serde::de::Expected for MinItems {
        fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
            match self.0 {
                1 => f.write_str("at least 1 item"),
                n => write!(f, "at least {n} items"),
            }
        }
    }

    ::std::thread_local! {
        static TOLERATED: ::std::cell::RefCell<Option<Vec<String>>> = const { ::std::cell::RefCell::new(None) };
    }

    /// Records a value that tolerant decoding dropped, when a caller collects them.
    pub fn tolerated(what: &str, error: &dyn ::std::fmt::Display) {
        TOLERATED.with(|t| {
            if let Some(list) = t.borrow_mut().as_mut() {
                list.push(format!("{what}: {error}"));
            }
        });
    }

    /// How many dropped values are recorded so far on this thread (0 when nobody collects).
    fn tolerated_mark() -> usize {
        TOLERATED.with(|t| t.borrow().as_ref().map_or(0, Vec::len))
    }

    /// Withdraws what was recorded since `mark`: the read it belonged to failed after all.
    fn withdraw_tolerated(mark: usize) {
        TOLERATED.with(|t| {
            if let Some(list) = t.borrow_mut().as_mut() {
                list.truncate(mark);
            }
        });
    }

    /// Runs `f`, returning what tolerant decoding dropped meanwhile on this thread.
    pub fn collect_tolerated<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
        let outer = TOLERATED.with(|t| t.borrow_mut().replace(Vec::new()));
        let r = f();
        let mine = TOLERATED.with(|t| ::std::mem::replace(&mut *t.borrow_mut(), outer)).unwrap_or_default();
        (r, mine)
    }

    /// serde_json's name for the newtype through which it lends a value's JSON text (the
    /// protocol of `serde_json::value::RawValue`, feature `raw_value`). Asking for it is only
    /// a shortcut: a deserializer that does not know the name reads the request as an
    /// ordinary newtype, and the value is held as a `Value` instead (see [`Held`]).
    const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

    /// A tolerant member's value, held for a try that may fail: its JSON text when the
    /// deserializer lends it (serde_json reading text: no tree is built, and the text is
    /// decoded straight into the member's type), otherwise a parsed `Value` (serde's buffering
    /// deserializers for internally tagged, untagged and flattened types). Either way a value
    /// of the wrong shape is tolerated, and malformed JSON still fails the message.
    ///
    /// Used for members of a structured type (an object, a union, an array item): those are
    /// the ones whose decoding can fail half-way through the value, where only the held value
    /// can be read again. Members of a scalar type and free-form members are read once, in
    /// place ([`scalar_on_error`], [`object_on_error`], [`value_on_error`]).
    pub enum Held<'de> {
        Text(Cow<'de, str>),
        Value(::serde_json::Value),
    }

    /// The first key of a map handed to [`Held`]: serde_json's token (compared, not copied),
    /// or the first member of an object handed over as it is.
    enum HeldKey {
        Token,
        Member(String),
    }

    impl<'de> ::serde::Deserialize<'de> for HeldKey {
        fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> ::serde::de::Visitor<'de> for V {
                type Value = HeldKey;
                fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    f.write_str("a string")
                }
                fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<HeldKey, E> {
                    Ok(if v == RAW_VALUE_TOKEN { HeldKey::Token } else { HeldKey::Member(v.to_owned()) })
                }
                fn visit_string<E: ::serde::de::Error>(self, v: String) -> Result<HeldKey, E> {
                    Ok(if v == RAW_VALUE_TOKEN { HeldKey::Token } else { HeldKey::Member(v) })
                }
            }
            deserializer.deserialize_str(V)
        }
    }

    impl<'de> ::serde::Deserialize<'de> for Held<'de> {
        fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> ::serde::de::Visitor<'de> for V {
                type Value = Held<'de>;
                fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    f.write_str("any JSON value")
                }
                // A deserializer without the shortcut.
                fn visit_newtype_struct<D: ::serde::Deserializer<'de>>(self, d: D) -> Result<Held<'de>, D::Error> {
                    <::serde_json::Value as ::serde::Deserialize>::deserialize(d).map(Held::Value)
                }
                // serde_json lends the text as a one-member map keyed by the token; any other
                // map is an object handed over as it is.
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Held<'de>, A::Error> {
                    let key = match map.next_key::<HeldKey>()? {
                        None => return Ok(Held::Value(::serde_json::Value::Object(::serde_json::Map::new()))),
                        Some(HeldKey::Token) => return map.next_value::<Str<'de>>().map(|Str(text)| Held::Text(text)),
                        Some(HeldKey::Member(key)) => key,
                    };
                    let first: ::serde_json::Value = map.next_value()?;
                    let mut object: ::serde_json::Map<String, ::serde_json::Value> =
                        ::serde::Deserialize::deserialize(::serde::de::value::MapAccessDeserializer::new(map))?;
                    object.insert(key, first);
                    Ok(Held::Value(::serde_json::Value::Object(object)))
                }
            }
            deserializer.deserialize_newtype_struct(RAW_VALUE_TOKEN, V)
        }
    }

    /// A held value is written as it was read: its text, or its tree.
    impl ::serde::Serialize for Held<'_> {
        fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use ::serde::ser::Error as _;
            match self {
                Held::Text(text) => {
                    ::serde_json::from_str::<&::serde_json::value::RawValue>(text).map_err(S::Error::custom)?.serialize(serializer)
                }
                Held::Value(value) => value.serialize(serializer),
            }
        }
    }

    impl Held<'_> {
        /// The value as `T`, or the value as a tree with the error that decoding it from the
        /// tree gives (the wording callers report). Text that does not decode is decoded once
        /// more from the tree, so the outcome is always that of the tree: a repeated member,
        /// which typed decoding of text refuses, keeps its last value there. The outer error
        /// is lent text that is not JSON, which serde_json does not lend.
        fn decode<T: ::serde::de::DeserializeOwned>(self) -> Result<Decoded<T>, ::serde_json::Error> {
            let value = match self {
                Held::Text(text) => match ::serde_json::from_str(&text) {
                    Ok(v) => return Ok(Decoded::Ok(v)),
                    Err(_) => ::serde_json::from_str(&text)?,
                },
                Held::Value(value) => value,
            };
            Ok(match T::deserialize(&value) {
                Ok(v) => Decoded::Ok(v),
                Err(e) => Decoded::Wrong(value, e),
            })
        }
    }

    /// What a [`Held`] value decoded to.
    enum Decoded<T> {
        Ok(T),
        Wrong(::serde_json::Value, ::serde_json::Error),
    }

    /// `x-deserialize-default-on-error`: a value that does not decode becomes the default.
    /// Malformed JSON still fails the message; only a well-formed value of the wrong shape is
    /// tolerated. For members of a structured type (see [`Held`]).
    pub fn default_on_error<'de, D, T>(deserializer: D, member: &str) -> Result<T, D::Error>
    where
        D: ::serde::Deserializer<'de>,
        T: ::serde::de::DeserializeOwned + Default,
    {
        match Held::deserialize(deserializer)?.decode::<T>().map_err(D::Error::custom)? {
            Decoded::Ok(v) => Ok(v),
            Decoded::Wrong(value, _) => {
                tolerated(member, &located::<T>(&value));
                Ok(T::default())
            }
        }
    }

    /// `x-deserialize-default-on-error` for a member of a scalar type (a string, a number, a
    /// string enum; optional or tristate), read once, in place: the value is read as a tree
    /// (`Value`: for a scalar, one small value) and `T` decoded from that tree, the outcome
    /// [`default_on_error`] gives (the tree's), without holding the text and reading it twice.
    /// A value of another kind (an object, an array) is read whole as a tree first.
    pub fn scalar_on_error<'de, D, T>(deserializer: D, member: &str) -> Result<T, D::Error>
    where
        D: ::serde::Deserializer<'de>,
        T: ::serde::de::DeserializeOwned + Default,
    {
        match deserializer.deserialize_any(Tree::<T>(::std::marker::PhantomData))? {
            Ok(v) => Ok(v),
            Err(value) => {
                tolerated(member, &located::<T>(&value));
                Ok(T::default())
            }
        }
    }

    /// Reads any value in place and tries `T` on it as a tree; `Err` is the tree `T` refused.
    struct Tree<T>(::std::marker::PhantomData<T>);

    impl<T: ::serde::de::DeserializeOwned> Tree<T> {
        /// `T` from a scalar's tree, moved in (a string becomes `T`'s without another copy);
        /// the tree is made again for the report when `T` refuses it.
        fn moved(value: ::serde_json::Value, again: impl FnOnce() -> ::serde_json::Value) -> Result<T, ::serde_json::Value> {
            T::deserialize(value).map_err(|_| again())
        }

        /// `T` from a tree that cannot be made again (read whole, or an owned string).
        fn kept(value: ::serde_json::Value) -> Result<T, ::serde_json::Value> {
            match T::deserialize(&value) {
                Ok(v) => Ok(v),
                Err(_) => Err(value),
            }
        }
    }

    // The trees are those `serde_json::Value` builds from the same calls.
    impl<'de, T: ::serde::de::DeserializeOwned> ::serde::de::Visitor<'de> for Tree<T> {
        type Value = Result<T, ::serde_json::Value>;
        fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E: ::serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Self::moved(::serde_json::Value::Bool(v), || ::serde_json::Value::Bool(v)))
        }
        fn visit_i64<E: ::serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Self::moved(v.into(), || v.into()))
        }
        fn visit_u64<E: ::serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Self::moved(v.into(), || v.into()))
        }
        fn visit_f64<E: ::serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
            let tree = || ::serde_json::Number::from_f64(v).map_or(::serde_json::Value::Null, ::serde_json::Value::Number);
            Ok(Self::moved(tree(), tree))
        }
        fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Self::moved(::serde_json::Value::String(v.to_owned()), || ::serde_json::Value::String(v.to_owned())))
        }
        fn visit_string<E: ::serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Self::kept(::serde_json::Value::String(v)))
        }
        fn visit_unit<E: ::serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Self::moved(::serde_json::Value::Null, || ::serde_json::Value::Null))
        }
        fn visit_none<E: ::serde::de::Error>(self) -> Result<Self::Value, E> {
            self.visit_unit()
        }
        fn visit_some<D: ::serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: ::serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            ::serde_json::Value::deserialize(::serde::de::value::SeqAccessDeserializer::new(seq)).map(Self::kept)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            ::serde_json::Value::deserialize(::serde::de::value::MapAccessDeserializer::new(map)).map(Self::kept)
        }
    }

    /// A free-form object member (`_meta`).
    pub type Object = ::serde_json::Map<String, ::serde_json::Value>;

    /// `x-deserialize-default-on-error` for a free-form object member (`_meta`): every object
    /// decodes, so an object is read once, in place, into the map; `null` reads as absent; a
    /// value of any other kind is tolerated as [`scalar_on_error`] tolerates it.
    pub fn object_on_error<'de, D: ::serde::Deserializer<'de>>(deserializer: D, member: &str) -> Result<Option<Object>, D::Error> {
        struct V;
        impl<'de> ::serde::de::Visitor<'de> for V {
            type Value = Result<Option<Object>, ::serde_json::Value>;
            fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Object::deserialize(::serde::de::value::MapAccessDeserializer::new(map)).map(|o| Ok(Some(o)))
            }
            fn visit_some<D: ::serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_bool<E: ::serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Tree(::std::marker::PhantomData).visit_bool(v)
            }
            fn visit_i64<E: ::serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Tree(::std::marker::PhantomData).visit_i64(v)
            }
            fn visit_u64<E: ::serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Tree(::std::marker::PhantomData).visit_u64(v)
            }
            fn visit_f64<E: ::serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Tree(::std::marker::PhantomData).visit_f64(v)
            }
            fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Tree(::std::marker::PhantomData).visit_str(v)
            }
            fn visit_string<E: ::serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Tree(::std::marker::PhantomData).visit_string(v)
            }
            fn visit_unit<E: ::serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(Ok(None))
            }
            fn visit_none<E: ::serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(Ok(None))
            }
            fn visit_seq<A: ::serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Tree(::std::marker::PhantomData).visit_seq(seq)
            }
        }
        match deserializer.deserialize_any(V)? {
            Ok(v) => Ok(v),
            Err(value) => {
                tolerated(member, &located::<Option<Object>>(&value));
                Ok(None)
            }
        }
    }

    /// `x-deserialize-default-on-error` for a member of any JSON value (`rawInput`): no
    /// well-formed value is of the wrong shape, so there is nothing to tolerate, and the
    /// value is read once, in place.
    pub fn value_on_error<'de, D: ::serde::Deserializer<'de>>(deserializer: D, _member: &str) -> Result<Option<::serde_json::Value>, D::Error> {
        Option::<::serde_json::Value>::deserialize(deserializer)
    }

    /// The decoding error of `value` as `T`, with the path of the offending member.
    fn located<T: ::serde::de::DeserializeOwned>(value: &::serde_json::Value) -> String {
        match ::serde_path_to_error::deserialize::<_, T>(value) {
            Err(e) if e.path().to_string() == "." => e.inner().to_string(),
            Err(e) => format!("at `{}`: {}", e.path(), e.inner()),
            Ok(_) => "decoding failed".to_owned(),
        }
    }

    /// Array members whose invalid items can be dropped: `Vec<T>`, `Option<Vec<T>>`,
    /// `Patch<Vec<T>>`.
    pub trait ItemList: Default + Sized {
        type Item: ::serde::de::DeserializeOwned;
        /// What `null` decodes to, when the member is nullable.
        fn null() -> Option<Self>;
        fn from_items(items: Vec<Self::Item>) -> Self;
    }

    impl<T: ::serde::de::DeserializeOwned> ItemList for Vec<T> {
        type Item = T;
        fn null() -> Option<Self> {
            None
        }
        fn from_items(items: Vec<T>) -> Self {
            items
        }
    }

    impl<T: ::serde::de::DeserializeOwned> ItemList for Option<Vec<T>> {
        type Item = T;
        fn null() -> Option<Self> {
            Some(None)
        }
        fn from_items(items: Vec<T>) -> Self {
            Some(items)
        }
    }

    impl<T: ::serde::de::DeserializeOwned> ItemList for super::Patch<Vec<T>> {
        type Item = T;
        fn null() -> Option<Self> {
            Some(super::Patch::Null)
        }
        fn from_items(items: Vec<T>) -> Self {
            super::Patch::Value(items)
        }
    }

    /// Reads an array member in place, item by item: each item is held (see [`Held`]) and
    /// decoded on its own, the ones that decode kept in order and each one dropped reported
    /// with its index. `Err` (inside) is a member that is not an array, with the wording of
    /// [`not_an_array`].
    struct EachItem<'m, L>(&'m str, ::std::marker::PhantomData<L>);

    impl<'de, L: ItemList> ::serde::de::Visitor<'de> for EachItem<'_, L> {
        type Value = Result<L, ::serde_json::Error>;
        fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_seq<A: ::serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            // Items are decoded as they are read, before the rest of the array is: when the
            // array turns out to be malformed JSON (the message fails), what its items
            // recorded is withdrawn, as if the array had been checked whole first.
            let mark = tolerated_mark();
            let mut read = || {
                let mut out = Vec::new();
                let mut i = 0;
                while let Some(item) = seq.next_element::<Held<'de>>()? {
                    match item.decode::<L::Item>().map_err(A::Error::custom)? {
                        Decoded::Ok(v) => out.push(v),
                        Decoded::Wrong(_, e) => tolerated(self.0, &format_args!("item {i} dropped: {e}")),
                    }
                    i += 1;
                }
                Ok(out)
            };
            match read() {
                Ok(out) => Ok(Ok(L::from_items(out))),
                Err(e) => {
                    withdraw_tolerated(mark);
                    Err(e)
                }
            }
        }
        fn visit_unit<E: ::serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(L::null().ok_or_else(|| ::serde::de::Error::custom("invalid type: null, expected an array")))
        }
        fn visit_none<E: ::serde::de::Error>(self) -> Result<Self::Value, E> {
            self.visit_unit()
        }
        fn visit_some<D: ::serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_bool<E: ::serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Err(not_an_array(&::serde_json::Value::Bool(v))))
        }
        fn visit_i64<E: ::serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Err(not_an_array(&v.into())))
        }
        fn visit_u64<E: ::serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Err(not_an_array(&v.into())))
        }
        fn visit_f64<E: ::serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Err(not_an_array(&::serde_json::Number::from_f64(v).map_or(::serde_json::Value::Null, ::serde_json::Value::Number))))
        }
        fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Err(not_an_array(&::serde_json::Value::String(v.to_owned()))))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let value = ::serde_json::Value::deserialize(::serde::de::value::MapAccessDeserializer::new(map))?;
            Ok(Err(not_an_array(&value)))
        }
    }

    /// The error for a member that should be an array, naming the value as JSON text.
    fn not_an_array(value: &::serde_json::Value) -> ::serde_json::Error {
        ::serde::de::Error::invalid_type(::serde::de::Unexpected::Other(&value.to_string()), &"an array")
    }

    /// `x-deserialize-skip-invalid-items`: items that do not decode are dropped; a value that
    /// is not an array still fails.
    pub fn skip_invalid_items<'de, D: ::serde::Deserializer<'de>, L: ItemList>(deserializer: D, member: &str) -> Result<L, D::Error> {
        deserializer.deserialize_any(EachItem(member, ::std::marker::PhantomData))?.map_err(D::Error::custom)
    }

    /// Both markers: items that do not decode are dropped, and a value that is not an array
    /// becomes the default.
    pub fn tolerant_items<'de, D: ::serde::Deserializer<'de>, L: ItemList>(deserializer: D, member: &str) -> Result<L, D::Error> {
        match deserializer.deserialize_any(EachItem(member, ::std::marker::PhantomData))? {
            Ok(v) => Ok(v),
            Err(e) => {
                tolerated(member, &e);
                Ok(L::default())
            }
        }
    }

    /// Keeps an unknown variant whole, as JSON text: the tag first, then every other member in
    /// order (those read before the tag, then the rest), each value's text as it came.
    pub fn unknown<'de, A: MapAccess<'de>>(
        tag_name: &'static str,
        tag: Cow<'de, str>,
        buffered: Vec<Buffered<'de>>,
        mut rest: A,
    ) -> Result<super::Unknown, A::Error> {
        use ::serde::ser::SerializeMap as _;
        use ::serde_json::value::RawValue;
        /// The object as it is written: serde_json writes the text, so it is not checked again.
        struct Object<'a, 'de> {
            tag_name: &'static str,
            tag: &'a str,
            buffered: &'a [Buffered<'de>],
            rest: &'a [(Cow<'de, str>, Box<RawValue>)],
        }
        impl ::serde::Serialize for Object<'_, '_> {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(1 + self.buffered.len() + self.rest.len()))?;
                map.serialize_entry(self.tag_name, self.tag)?;
                for (key, value) in self.buffered {
                    map.serialize_entry(key, value)?;
                }
                for (key, value) in self.rest {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
        // Each value is read as its text. (A deserializer that buffers its input for serde, as
        // an untagged or flattened parent does, cannot hand out raw text; no type of the schema
        // puts an open union there.)
        let mut members = Vec::new();
        while let Some(key) = rest.next_key::<Str<'de>>()? {
            members.push((key.0, rest.next_value::<Box<RawValue>>()?));
        }
        let object = Object { tag_name, tag: &tag, buffered: &buffered, rest: &members };
        ::serde_json::value::to_raw_value(&object).map(super::Unknown).map_err(A::Error::custom)
    }
}
