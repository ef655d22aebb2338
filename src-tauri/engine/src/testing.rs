//! Strategies the engine's property tests share.

use proptest::prelude::*;
use serde_json::Value;

/// Short text: mostly `words` (the keys and values a format gives meaning to), sometimes any
/// printable text.
pub fn word(words: &'static [&'static str]) -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(words).prop_map(String::from),
        1 => "\\PC{0,12}",
    ]
    .boxed()
}

/// Any JSON value, a few levels deep, its keys and strings mostly `words`.
pub fn json(words: &'static [&'static str]) -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        word(words).prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((word(words), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
    .boxed()
}
