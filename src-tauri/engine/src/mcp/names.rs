//! Names under which MCP tools are offered to the model: `server__tool`, limited to
//! `[A-Za-z0-9_-]` and 64 characters, collision-free, and a function of the tool set alone
//! (so the same servers give the same names on every start).

use std::collections::{BTreeMap, HashMap};

pub const MAX_LEN: usize = 64;

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn fnv1a(s: &str) -> u32 {
    let mut h: u32 = 0x811c9dc5;
    for b in s.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    }
    h
}

fn hashed(server: &str, tool: &str, base: &str) -> String {
    let suffix = format!("_{:08x}", fnv1a(&format!("{server}\0{tool}")));
    let keep = MAX_LEN - suffix.len();
    let head: String = base.chars().take(keep).collect();
    format!("{head}{suffix}")
}

/// Maps every (server, tool) to its exposed name.
pub fn assign(tools: &[(String, String)]) -> BTreeMap<String, (String, String)> {
    let mut by_base: HashMap<String, Vec<&(String, String)>> = HashMap::new();
    for t in tools {
        by_base
            .entry(format!("{}__{}", sanitize(&t.0), sanitize(&t.1)))
            .or_default()
            .push(t);
    }
    let mut out = BTreeMap::new();
    for (base, members) in by_base {
        if members.len() == 1 && base.len() <= MAX_LEN {
            let (s, t) = members[0];
            out.insert(base, (s.clone(), t.clone()));
        } else {
            for (s, t) in members {
                out.insert(hashed(s, t, &base), (s.clone(), t.clone()));
            }
        }
    }
    out
}

/// How the exposed names of a server's tools begin (`server__`; a name too long for that, or
/// colliding, is hashed and may not).
pub fn prefix(server: &str) -> String {
    format!("{}__", sanitize(server))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str, t: &str) -> (String, String) {
        (s.into(), t.into())
    }

    #[test]
    fn plain_names_are_server_double_underscore_tool() {
        let m = assign(&[p("calculator", "add"), p("my server", "get.time")]);
        assert_eq!(m["calculator__add"], p("calculator", "add"));
        assert_eq!(m["my_server__get_time"], p("my server", "get.time"));
    }

    #[test]
    fn collisions_and_long_names_get_distinct_stable_hashed_names() {
        let tools = [p("a", "x.y"), p("a", "x_y"), p("s", &"t".repeat(100))];
        let m1 = assign(&tools);
        let m2 = assign(&[tools[2].clone(), tools[1].clone(), tools[0].clone()]);
        assert_eq!(m1, m2, "independent of order");
        assert_eq!(m1.len(), 3);
        for name in m1.keys() {
            assert!(name.len() <= MAX_LEN, "{name}");
            assert!(name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        }
        assert!(!m1.contains_key("a__x_y"));
    }
}
