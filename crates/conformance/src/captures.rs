//! `$name` captures and the comparison of expected against actual JSON (format:
//! `spec/vectors/README.md`, "Captured ids").

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Bound `$name` captures of one vector.
#[derive(Debug, Default, Clone)]
pub struct Captures {
    bound: BTreeMap<String, Value>,
}

fn capture_name(s: &str) -> Option<&str> {
    let name = s.strip_prefix('$')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    if (first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Some(name)
    } else {
        None
    }
}

/// `$$x` is the literal text `$x`.
fn unescape(s: &str) -> String {
    s.strip_prefix("$$").map(|r| format!("${r}")).unwrap_or_else(|| s.to_owned())
}

impl Captures {
    /// Compares `expected` (with captures) against `actual`, binding new captures; `at` names
    /// the place for the mismatch message.
    pub fn matches(&mut self, expected: &Value, actual: &Value, at: &str) -> Result<(), String> {
        match (expected, actual) {
            (Value::String(e), _) if capture_name(e).is_some() => self.bind(e, actual, at),
            (Value::String(e), Value::String(a)) => {
                let e = unescape(e);
                if &e == a {
                    Ok(())
                } else {
                    Err(format!("{at}: expected {e:?}, got {a:?}"))
                }
            }
            (Value::Object(e), Value::Object(a)) => {
                for (k, ev) in e {
                    match a.get(k) {
                        Some(av) => self.matches(ev, av, &format!("{at}.{k}"))?,
                        None => return Err(format!("{at}: missing member `{k}` (expected {ev})")),
                    }
                }
                if let Some(k) = a.keys().find(|k| !e.contains_key(*k)) {
                    return Err(format!("{at}: unexpected member `{k}`: {}", a[k]));
                }
                Ok(())
            }
            (Value::Array(e), Value::Array(a)) => {
                if e.len() != a.len() {
                    return Err(format!("{at}: expected {} items, got {}: {actual}", e.len(), a.len()));
                }
                e.iter().zip(a).enumerate().try_for_each(|(i, (ev, av))| self.matches(ev, av, &format!("{at}[{i}]")))
            }
            (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() && e.is_f64() == a.is_f64() => Ok(()),
            _ if expected == actual => Ok(()),
            _ => Err(format!("{at}: expected {expected}, got {actual}")),
        }
    }

    fn bind(&mut self, capture: &str, actual: &Value, at: &str) -> Result<(), String> {
        let name = capture_name(capture).unwrap_or(capture);
        match self.bound.get(name) {
            Some(v) if v == actual => Ok(()),
            Some(v) => Err(format!("{at}: ${name} is bound to {v}, got {actual}")),
            None => {
                if !matches!(actual, Value::String(_) | Value::Number(_)) {
                    return Err(format!("{at}: ${name} must capture a string or number, got {actual}"));
                }
                if let Some((other, _)) = self.bound.iter().find(|(_, v)| *v == actual) {
                    return Err(format!("{at}: ${name} would bind {actual}, already bound to ${other}"));
                }
                self.bound.insert(name.to_owned(), actual.clone());
                Ok(())
            }
        }
    }

    /// Replaces bound captures by their values (`$$x` becomes `$x`); an unbound one is an error.
    pub fn substitute(&self, v: &Value) -> Result<Value, String> {
        Ok(match v {
            Value::String(s) => match capture_name(s) {
                Some(name) => self.bound.get(name).cloned().ok_or_else(|| format!("capture ${name} is used before it is bound"))?,
                None => Value::String(unescape(s)),
            },
            Value::Array(items) => Value::Array(items.iter().map(|i| self.substitute(i)).collect::<Result<_, _>>()?),
            Value::Object(obj) => {
                Value::Object(obj.iter().map(|(k, v)| Ok((k.clone(), self.substitute(v)?))).collect::<Result<Map<_, _>, String>>()?)
            }
            other => other.clone(),
        })
    }
}

/// An expected error without `data.detail` ignores an actual `detail` (and a `data` left empty).
pub(crate) fn strip_detail(expected: &Value, actual: &mut Value) {
    // A batch's answers, entry by entry.
    if let (Value::Array(expected), Value::Array(actual)) = (expected, &mut *actual) {
        for (e, a) in expected.iter().zip(actual.iter_mut()) {
            strip_detail(e, a);
        }
        return;
    }
    let Some(err) = actual.get_mut("error") else { return };
    let expected_data = expected.get("error").and_then(|e| e.get("data"));
    if expected_data.is_some_and(|d| d.get("detail").is_some()) {
        return;
    }
    if let Some(Value::Object(data)) = err.get_mut("data") {
        data.remove("detail");
        if data.is_empty() && expected_data.is_none() {
            if let Some(e) = err.as_object_mut() {
                e.remove("data");
            }
        }
    }
}
