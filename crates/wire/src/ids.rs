//! What the id newtypes offer beyond the generated code: built from `&str`, read as `&str`,
//! compared with string literals, and looked up by `&str` in maps keyed by them.

use std::borrow::Borrow;

use crate::{MessageId, SessionId};

macro_rules! string_id {
    ($($id:ident),*) => {$(
        impl From<&str> for $id {
            fn from(value: &str) -> Self {
                $id(value.to_owned())
            }
        }

        impl AsRef<str> for $id {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        /// Hashing and ordering are the inner string's (the derives see one field), so maps
        /// keyed by the id can be searched with a `&str`.
        impl Borrow<str> for $id {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $id {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $id {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    )*};
}

string_id!(SessionId, MessageId);

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn ids_read_and_compare_as_strings() {
        let id = SessionId::from("sess_1");
        assert_eq!(id, "sess_1");
        assert_eq!(id.as_ref(), "sess_1");
        let map = BTreeMap::from([(MessageId::from("msg_1"), 1)]);
        assert_eq!(map.get("msg_1"), Some(&1));
        assert_eq!(map.get("msg_2"), None);
    }
}
