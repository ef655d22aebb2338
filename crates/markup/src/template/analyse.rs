//! The comparison itself (see the module doc of [`super`]).

use serde_json::{json, Value};

use super::render::*;
use super::Learning;
use crate::families::learned::{self, leak, Args, Call, Calls, Learned, Tagged, ID_HOLE, KEY_HOLE};
use crate::families::{Cx, Family, ModelFacts, Strip};
use crate::recover::recover_with;

/// What `template` teaches, its learned family registered.
pub fn learn(template: &str, digest: &str) -> Learning {
    let then = named_then(template);
    let mut out = Learning {
        family: None,
        calls: None,
        thinking: None,
        opens_thinking: false,
        not_learned: None,
        then,
        digest: digest.to_string(),
    };
    if is_go_template(template) {
        out.not_learned = Some(
            "a Go template (Ollama's), which is not rendered here: the named families read its replies"
                .into(),
        );
        return out;
    }
    let renders = match Renders::new(template) {
        Ok(r) => r,
        Err(why) => {
            out.not_learned = Some(why);
            return out;
        }
    };
    let (thinking, opens) = renders.thinking(template);
    let end = renders.end_token();
    let (calls, why) = match renders.calls(thinking) {
        Ok(c) => (Some(c), None),
        Err(why) => (None, Some(why)),
    };
    let mut strips: Vec<Strip> = Vec::new();
    if let Some((o, c)) = thinking {
        strips.push(Strip::Thinking(o, c));
    }
    let end_tokens: Vec<&'static str> = end.into_iter().collect();
    for t in &end_tokens {
        strips.push(Strip::Token(t));
    }
    let markers: Vec<&'static str> = calls
        .as_ref()
        .map(|c| {
            let open = if c.section_open.trim().is_empty() {
                c.call_open
            } else {
                c.section_open
            };
            leak(learned::literal_lead(open))
        })
        .filter(|m| !m.is_empty())
        .into_iter()
        .collect();
    if calls.is_none() && thinking.is_none() && end_tokens.is_empty() {
        out.not_learned = why;
        return out;
    }
    let sketch = calls.as_ref().map(sketch);
    let family = Learned {
        id: leak(format!("learned:{digest}")),
        sketch: sketch.unwrap_or("learned from its template"),
        calls: calls.clone(),
        thinking,
        opens_thinking: opens,
        end_tokens: Vec::leak(end_tokens),
        then,
        markers: Vec::leak(markers),
        strips: Vec::leak(strips),
    };
    // what was learned must read the template's own calls back
    let (family, why) = match (&calls, renders.check(&family)) {
        (Some(_), Err(e)) => (
            Learned {
                calls: None,
                markers: &[],
                sketch: "learned from its template",
                ..family
            },
            Some(e),
        ),
        _ => (family, why),
    };
    let family = learned::register(family);
    out.family = Some(family.id);
    out.calls = family.calls.as_ref().map(|_| family.sketch.to_string());
    out.thinking = thinking.map(|(o, c)| format!("{o}…{c}"));
    out.opens_thinking = opens;
    out.not_learned = why;
    out
}

/// See [`super::reply_as_written`].
pub fn reply_as_written(
    template: &str,
    assistant: &Value,
    tools: &Value,
) -> Result<String, String> {
    let renders = Renders::new(template)?;
    let r = Renderer::new(template)?;
    let user = json!({"role": "user", "content": USER});
    let full = r.render_with(&json!([user, assistant]), tools, false, true)?;
    let gen = r.render_with(&json!([user]), tools, true, true)?;
    // the reply starts after the prompt, and ends where the turn ends
    let start = boundary(&full, lcp(&full, &gen));
    let end = renders.reply_end(&full, start);
    Ok(full[start..end.max(start)].to_string())
}

/// The sentinels' call as the probe gives it, and as a reply must give it back.
fn first_args() -> Value {
    json!({ KEY_1: VAL_1, KEY_2: NUM })
}

fn second_args() -> Value {
    json!({ KEY_1: VAL_2 })
}

/// The template's renders of the probe conversations.
struct Renders {
    /// The prompt for a reply, thinking on (and off, when the template renders it).
    gen: String,
    gen_off: Option<String>,
    /// A reply with only text.
    r0: String,
    /// Replies with one call and with two (when they render).
    r1: Result<String, String>,
    r2: Option<String>,
    /// A reply with reasoning and text.
    rr: Option<String>,
}

impl Renders {
    fn new(template: &str) -> Result<Renders, String> {
        let r = Renderer::new(template)?;
        let user = json!({"role": "user", "content": USER});
        let say = |m: Value| json!([user.clone(), m]);
        let r0 = r
            .render(
                &say(json!({"role": "assistant", "content": CONTENT})),
                false,
                true,
            )
            .map_err(|e| format!("the template does not render a reply: {e}"))?;
        if !r0.contains(CONTENT) {
            return Err("the template does not write a reply it is given".into());
        }
        let gen = r
            .render(&json!([user]), true, true)
            .map_err(|e| format!("the template does not render a prompt: {e}"))?;
        let gen_off = r.render(&json!([user]), true, false).ok();
        let c1 = call(FUN_1, first_args(), ID_1);
        let c2 = call(FUN_2, second_args(), ID_2);
        let r1 = r.render(
            &say(json!({"role": "assistant", "content": "", "tool_calls": [c1.clone()]})),
            false,
            true,
        );
        let r2 = r
            .render(
                &say(json!({"role": "assistant", "content": "", "tool_calls": [c1, c2]})),
                false,
                true,
            )
            .ok();
        let rr = r
            .render(
                &say(
                    json!({"role": "assistant", "content": CONTENT, "reasoning_content": THINKING}),
                ),
                false,
                true,
            )
            .ok();
        Ok(Renders {
            gen,
            gen_off,
            r0,
            r1,
            r2,
            rr,
        })
    }

    /// The token that ends a reply (not the tokenizer's eos the probe gave).
    fn end_token(&self) -> Option<&'static str> {
        let at = self.r0.find(CONTENT)? + CONTENT.len();
        let after = &self.r0[at..];
        // a token of markup, or else the short run of symbols that ends the turn (`[e~[`)
        let m = leading_marker(after).or_else(|| {
            let w = after.split_whitespace().next()?;
            (w.len() <= 16 && w.contains(|c: char| !c.is_alphanumeric())).then_some(w)
        })?;
        (!m.contains(EOS) && !m.contains(BOS)).then(|| leak(m))
    }

    /// Where the reply in a render ends: at the end token after `from`, or the end.
    fn reply_end(&self, r: &str, from: usize) -> usize {
        let after = &r[from..];
        let mut end = r.len();
        if let Some(t) = self.end_token() {
            if let Some(p) = after.find(t) {
                end = from + p;
            }
        }
        if let Some(p) = r[from..end].find(EOS) {
            end = from + p;
        }
        from + r[from..end].trim_end().len()
    }

    /// The reply in a render: after the prompt, up to the end of the turn (the last sentinel
    /// before it ends at `last`).
    fn reply<'r>(&self, r: &'r str) -> &'r str {
        let start = boundary(r, lcp(r, &self.gen));
        let last = last_sentinel(r).max(start);
        &r[start..self.reply_end(r, last).max(start)]
    }

    /// Thinking's markers, and whether the prompt opens it.
    fn thinking(&self, template: &str) -> (Option<(&'static str, &'static str)>, bool) {
        let gen_end = self.gen.trim_end();
        // a reply with reasoning: the markers around it
        if let Some(rr) = &self.rr {
            if let (Some(t), Some(c)) = (rr.find(THINKING), rr.find(CONTENT)) {
                if t < c {
                    let post = leading_marker(&rr[t + THINKING.len()..c]);
                    let pre = trailing_marker(&rr[..t]);
                    match (pre, post) {
                        (Some(pre), Some(post)) if thinking_like(pre) || thinking_like(post) => {
                            let opens = gen_end.ends_with(pre);
                            return (Some((leak(pre), leak(post))), opens);
                        }
                        (None, Some(post)) => {
                            // nothing marks its start: the prompt leads into it
                            let start = lcp(rr, &self.gen);
                            let lead = rr[start.min(t)..t].trim();
                            if start >= t || gen_end.ends_with(lead) {
                                return (Some(("", leak(post))), true);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        // thinking on and off: the prompt's ends differ by its markers
        if let Some(off) = &self.gen_off {
            let q = lcp(&self.gen, off);
            let on_tail = self.gen[q..].trim();
            let off_tail = off[q..].trim();
            if let Some((m1, m2)) = two_markers(off_tail) {
                if on_tail.is_empty() || on_tail == m1 {
                    return (Some((leak(m1), leak(m2))), gen_end.ends_with(m1));
                }
            }
            if off_tail.is_empty() && is_marker(on_tail) {
                if let Some(close) = closer(on_tail).filter(|c| template.contains(c.as_str())) {
                    return (Some((leak(on_tail), leak(close))), true);
                }
            }
        }
        // the prompt ends with a thinking marker whose closer the template has
        if let Some(open) = trailing_marker(gen_end).filter(|m| thinking_like(m)) {
            if let Some(close) = closer(open).filter(|c| template.contains(c.as_str())) {
                return (Some((leak(open), leak(close))), true);
            }
        }
        // the template's text names a thinking marker and its closer
        for open in bracket_tokens(template) {
            if thinking_like(open) && !open.starts_with("</") && !open.starts_with("[/") {
                if let Some(close) = closer(open).filter(|c| template.contains(c.as_str())) {
                    return (Some((leak(open), leak(close))), false);
                }
            }
        }
        (None, false)
    }

    /// The calls' markup.
    fn calls(&self, thinking: Option<(&str, &str)>) -> Result<Calls, String> {
        let r1 = self
            .r1
            .as_ref()
            .map_err(|e| format!("the template does not render a reply with a call: {e}"))?;
        let mut body1 = self.reply(r1);
        if !body1.contains(FUN_1) {
            return Err("the template does not write the calls it is given".into());
        }
        // an empty thinking block before the calls is not theirs
        if let Some((_, close)) = thinking {
            if let Some(p) = body1.find(close) {
                if p < body1.find(FUN_1).unwrap_or(0) {
                    body1 = &body1[p + close.len()..];
                }
            }
        }
        let body2 = self
            .r2
            .as_deref()
            .filter(|r| self.reply(r).contains(FUN_2))
            .map(|r2| {
                let mut b = self.reply(r2);
                if let Some((_, close)) = thinking {
                    if let Some(p) = b.find(close) {
                        if p < b.find(FUN_1).unwrap_or(0) {
                            b = &b[p + close.len()..];
                        }
                    }
                }
                b
            });
        let n = body1.find(FUN_1).ok_or("the call is not in the reply")?;
        let quoted =
            body1[..n].ends_with(['"', '\'']) && body1[n + FUN_1.len()..].starts_with(['"', '\'']);
        // a name in quotes is a JSON call's, or a tag's attribute (`<invoke name="…">`)
        let calls = match quoted {
            true => {
                json_calls(body1, body2).or_else(|e| named_calls(body1, body2).map_err(|_| e))?
            }
            false => named_calls(body1, body2)?,
        };
        Ok(calls)
    }

    /// Whether `family` reads the template's own one and two calls back exactly, and leaves
    /// none of their markup.
    fn check(&self, family: &Learned) -> Result<(), String> {
        let Some(calls) = &family.calls else {
            return Ok(());
        };
        let _ = calls;
        // checked under an id of its own: only what passes is registered under its own
        let probe = learned::register(Learned {
            id: leak(format!("{}-check", family.id)),
            ..family.clone()
        });
        let mut cases = vec![];
        if let Ok(r1) = &self.r1 {
            cases.push((self.reply(r1).to_string(), 1));
        }
        if let Some(r2) = self.r2.as_deref().filter(|r| self.reply(r).contains(FUN_2)) {
            cases.push((self.reply(r2).to_string(), 2));
        }
        for (reply, n) in cases {
            let offered = |name: &str| name == FUN_1 || name == FUN_2;
            let schema = |_: &str| Some(tools()[0]["function"]["parameters"].clone());
            let cx = Cx {
                offered: &offered,
                schema: &schema,
                quoted: None,
                family: Some(probe.id()),
            };
            let got =
                recover_with(&reply, &cx).ok_or("it reads no call in the template's own reply")?;
            let want: Vec<(String, Value)> = [(FUN_1, first_args()), (FUN_2, second_args())]
                .into_iter()
                .take(n)
                .map(|(a, b)| (a.to_string(), b))
                .collect();
            let read: Vec<(String, Value)> = got
                .calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect();
            if read != want {
                return Err(format!(
                    "it reads the template's own reply with {n} call(s) as {read:?}"
                ));
            }
            if got.calls.iter().any(|c| c.family != probe.id()) {
                return Err(
                    "a named family, not what was learned, read the template's own reply".into(),
                );
            }
            if !got.text.trim().is_empty() {
                return Err(format!(
                    "it leaves {:?} of the template's own reply",
                    got.text
                ));
            }
        }
        Ok(())
    }
}

/// The end of the last sentinel in a render (the reply ends after it).
fn last_sentinel(r: &str) -> usize {
    [FUN_2, VAL_2, FUN_1, VAL_1, KEY_2, KEY_1, "7"]
        .iter()
        .filter_map(|s| r.rfind(s).map(|p| p + s.len()))
        .filter(|p| *p <= r.len())
        .max()
        .unwrap_or(0)
}

/// Calls written as JSON objects holding their name.
fn json_calls(body1: &str, body2: Option<&str>) -> Result<Calls, String> {
    let n = body1.find(FUN_1).ok_or("no call")?;
    let (s, e, v) = outer_value(body1, n).ok_or("the call's JSON does not parse")?;
    let (name_key, args_key) =
        keys_of(&v).ok_or("no object holds the call's name and its arguments")?;
    let p = &body1[..s];
    let q = &body1[e..];
    let (section_open, call_open, call_close, section_close, sep) = match body2 {
        Some(b2) => {
            let n1 = b2.find(FUN_1).ok_or("no first call")?;
            let n2 = b2.find(FUN_2).ok_or("no second call")?;
            let (s1, e1, _) = outer_value(b2, n1).ok_or("the first of two calls does not parse")?;
            let (s2, _, _) = outer_value(b2, n2).ok_or("the second of two calls does not parse")?;
            if s1 == s2 {
                // one value holds both (a list of calls)
                (p, "", "", q, "")
            } else {
                let between = &b2[e1..s2];
                let (head, tail, sep) = split_between(p, q, between);
                (
                    &p[..p.len() - head.len()],
                    head,
                    tail,
                    &q[tail.len()..],
                    sep,
                )
            }
        }
        None => ("", p, q, "", ""),
    };
    if section_open.trim().is_empty() && call_open.trim().is_empty() {
        return Err("the calls are bare JSON objects, with no markup of their own: the JSON family reads them".into());
    }
    Ok(Calls {
        section_open: lit(section_open),
        section_close: lit(section_close),
        call_open: lit(call_open),
        call_close: lit(call_close),
        sep: lit(sep),
        call: Call::Json { name_key, args_key },
    })
}

/// The outermost JSON value in `text` that holds byte `at`: its start, its end and the value.
fn outer_value(text: &str, at: usize) -> Option<(usize, usize, Value)> {
    for (i, c) in text[..at].char_indices() {
        if c != '{' && c != '[' {
            continue;
        }
        let mut b = crate::lenient::Balance::new(i);
        let Some(end) = b.advance(text.as_bytes()) else {
            continue;
        };
        if end <= at {
            continue;
        }
        let s = &text[i..end];
        let v = serde_json::from_str(s)
            .ok()
            .or_else(|| crate::pylit::literal(s))?;
        return Some((i, end, v));
    }
    None
}

/// The keys of the call object in `v` that hold the name and the arguments (`None` for the name:
/// it is the key of the arguments).
fn keys_of(v: &Value) -> Option<(Option<&'static str>, Option<&'static str>)> {
    match v {
        Value::Array(items) => items.iter().find_map(keys_of),
        Value::Object(o) => {
            if let Some(args) = o.get(FUN_1) {
                if is_args(args) {
                    return Some((None, None));
                }
            }
            let name = o.iter().find(|(_, x)| x.as_str() == Some(FUN_1));
            if let Some((nk, _)) = name {
                let ak = o
                    .iter()
                    .find(|(_, x)| is_args(x))
                    .map(|(k, _)| leak(k.as_str()));
                return Some((Some(leak(nk.as_str())), ak));
            }
            o.values().find_map(keys_of)
        }
        _ => None,
    }
}

fn is_args(v: &Value) -> bool {
    *v == first_args()
        || v.as_str()
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .is_some_and(|x| x == first_args())
}

/// Calls whose name is in markup.
fn named_calls(body1: &str, body2: Option<&str>) -> Result<Calls, String> {
    let n = body1.find(FUN_1).ok_or("no call")?;
    let after_name = n + FUN_1.len();
    let (name_close, args, args_end) = match json_args(body1, after_name) {
        Some((s, e)) => (&body1[after_name..s], Args::Json, e),
        None => {
            let (t, before, end) = tagged_args(body1, after_name)?;
            (before, Args::Tagged(t), end)
        }
    };
    let tend1 = &body1[after_name..];
    let args_rel = args_end - after_name;
    let (section_open, call_open, call_close, section_close, sep) = match body2 {
        Some(b2) => {
            let n1 = b2.find(FUN_1).ok_or("no first call")?;
            let n2 = b2.find(FUN_2).ok_or("no second call")?;
            let t = &b2[n1 + FUN_1.len()..n2];
            let x = lcp(tend1, t);
            let head = lcs(&body1[..n], t);
            let x = x.min(t.len().saturating_sub(head));
            if x < args_rel {
                return Err("the calls' markup differs from one call to the next".into());
            }
            let sep = &t[x..t.len() - head];
            (
                &body1[..n - head],
                &body1[n - head..n],
                &tend1[args_rel..x],
                &tend1[x..],
                sep,
            )
        }
        None => ("", &body1[..n], &tend1[args_rel..], "", ""),
    };
    Ok(Calls {
        section_open: lit(section_open),
        section_close: lit(section_close),
        call_open: lit(call_open),
        call_close: lit(call_close),
        sep: lit(sep),
        call: Call::Named {
            name_close: lit(name_close),
            args,
        },
    })
}

/// The probe's arguments as one JSON object after byte `from`: its start and end.
fn json_args(body: &str, from: usize) -> Option<(usize, usize)> {
    for (i, c) in body[from..].char_indices() {
        if c != '{' {
            continue;
        }
        let at = from + i;
        let mut b = crate::lenient::Balance::new(at);
        let Some(end) = b.advance(body.as_bytes()) else {
            continue;
        };
        let s = &body[at..end];
        let v = serde_json::from_str::<Value>(s)
            .ok()
            .or_else(|| crate::pylit::literal(s));
        if v.as_ref() == Some(&first_args()) {
            return Some((at, end));
        }
        return None;
    }
    None
}

/// The probe's arguments as tagged parameters after byte `from`: their markers, the text
/// between the name and the first parameter, and where the parameters end.
fn tagged_args(body: &str, from: usize) -> Result<(Tagged, &str, usize), String> {
    let missing = || "the call's arguments are neither JSON nor tagged parameters".to_string();
    let k1 = from + body[from..].find(KEY_1).ok_or_else(missing)?;
    let v1 = k1 + body[k1..].find(VAL_1).ok_or_else(missing)?;
    let k2 = v1 + body[v1..].find(KEY_2).ok_or_else(missing)?;
    let v2 = k2
        + KEY_2.len()
        + body[k2 + KEY_2.len()..]
            .find(&NUM.to_string())
            .ok_or_else(missing)?;
    let mid1 = &body[k1 + KEY_1.len()..v1];
    let mid2 = &body[k2 + KEY_2.len()..v2];
    let kpost = lcp(mid1, mid2);
    let (r1, r2) = (&mid1[kpost..], &mid2[kpost..]);
    let vpre = lcs(r1, r2);
    let (w1, w2) = (&r1[..r1.len() - vpre], &r2[..r2.len() - vpre]);
    let mut v1_end = v1 + VAL_1.len();
    let mut quote = None;
    let mut string_tag = None;
    if !w1.is_empty() && w2.is_empty() && body[v1_end..].starts_with(w1) {
        quote = Some(lit(w1));
        v1_end += w1.len();
    } else if !w1.is_empty() && !w2.is_empty() {
        string_tag = Some((lit(w1), lit(w2)));
    } else if !(w1.is_empty() && w2.is_empty()) {
        return Err("the parameters' markup differs in a way not understood".into());
    }
    let v2_end = v2 + NUM.to_string().len();
    let before = &body[from..k1];
    let between = body[v1_end..k2].replace(KEY_1, &KEY_HOLE.to_string());
    let after = body[v2_end..].replace(KEY_2, &KEY_HOLE.to_string());
    let khead = lcs(before, &between);
    let vtail = lcp(&between, &after).min(between.len() - khead);
    let sep = &between[vtail..between.len() - khead];
    // the closing marker as written (a hole stands for the key's name)
    let vtail_text = &between[..vtail];
    let holes = vtail_text.matches(KEY_HOLE).count();
    let vtail_len = vtail + holes * KEY_2.len() - holes * KEY_HOLE.len_utf8();
    let end = v2_end + vtail_len;
    let t = Tagged {
        khead: lit(&before[before.len() - khead..]),
        kpost: lit(&mid1[..kpost]),
        vpre: lit(&r1[r1.len() - vpre..]),
        vtail: lit(vtail_text),
        sep: lit(sep),
        quote,
        string_tag,
    };
    if t.khead.trim().is_empty() && t.sep.trim().is_empty() {
        return Err("nothing marks where one parameter ends and the next starts".into());
    }
    Ok((t, &before[..before.len() - khead], end))
}

/// The text between two calls, split: what closes the first (shared with what follows the
/// only call of a reply with one, `q`), what opens the second (shared with what precedes the
/// only call, `p`), and what is between.
fn split_between<'a>(p: &'a str, q: &'a str, between: &'a str) -> (&'a str, &'a str, &'a str) {
    let head = lcs(p, between);
    let tail = lcp(q, between).min(between.len() - head);
    (
        &between[between.len() - head..],
        &between[..tail],
        &between[tail..between.len() - head],
    )
}

/// A learned literal, kept: the probe's ids become holes.
fn lit(s: &str) -> &'static str {
    leak(
        s.replace(ID_1, &ID_HOLE.to_string())
            .replace(ID_2, &ID_HOLE.to_string()),
    )
}

/// The calls' markup as the window shows it, on one line.
fn sketch(c: &Calls) -> &'static str {
    let one = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let call = match &c.call {
        Call::Json { name_key, args_key } => match name_key {
            Some(n) => format!(
                "{{\"{n}\": \"NAME\", \"{}\": {{…}}}}",
                args_key.unwrap_or("arguments")
            ),
            None => "{\"NAME\": {…}}".to_string(),
        },
        Call::Named { name_close, args } => {
            let args = match args {
                Args::Json => "{…}".to_string(),
                Args::Tagged(t) => format!(
                    "{}KEY{}{}{}…{}{}",
                    t.khead,
                    t.kpost,
                    t.string_tag.map_or("", |(s, _)| s),
                    t.vpre,
                    t.quote.unwrap_or(""),
                    t.vtail.replace(KEY_HOLE, "KEY")
                ),
            };
            format!("NAME{name_close}{args}")
        }
    };
    let s = format!(
        "{}{}{}{}{}",
        c.section_open, c.call_open, call, c.call_close, c.section_close
    );
    leak(one(&s).replace(ID_HOLE, "ID"))
}

/// `n`, or where a token of markup that is still open at `n` starts (two texts that share the
/// `<` of different tags share no tag).
fn boundary(s: &str, n: usize) -> usize {
    let head = &s[..n];
    match head.rfind(['<', '[']) {
        Some(open) if !head[open..].contains(['>', ']', '\n']) => open,
        _ => n,
    }
}

/// The length of the longest common prefix, at a character boundary.
pub fn lcp(a: &str, b: &str) -> usize {
    let mut n = 0;
    for ((i, x), y) in a.char_indices().zip(b.chars()) {
        if x != y {
            return i;
        }
        n = i + x.len_utf8();
    }
    n
}

/// The length of the longest common suffix, at a character boundary.
pub fn lcs(a: &str, b: &str) -> usize {
    let mut n = 0;
    for (x, y) in a.chars().rev().zip(b.chars().rev()) {
        if x != y {
            break;
        }
        n += x.len_utf8();
    }
    n
}

/// A token of markup: `<…>` or `[…]`, short, on one line.
fn is_marker(s: &str) -> bool {
    let ok = |open: char, close: char| {
        s.starts_with(open)
            && s.ends_with(close)
            && s.len() >= 3
            && s.len() <= 48
            && !s[1..s.len() - 1].contains([open, close, '\n'])
    };
    ok('<', '>') || ok('[', ']')
}

/// The token of markup `s` starts with (after blanks).
fn leading_marker(s: &str) -> Option<&str> {
    let s = s.trim_start();
    let close = match s.chars().next()? {
        '<' => '>',
        '[' => ']',
        _ => return None,
    };
    let end = s.find(close)? + 1;
    Some(&s[..end]).filter(|m| is_marker(m))
}

/// The token of markup `s` ends with (before blanks).
fn trailing_marker(s: &str) -> Option<&str> {
    let s = s.trim_end();
    let open = match s.chars().last()? {
        '>' => '<',
        ']' => '[',
        _ => return None,
    };
    let start = s.rfind(open)?;
    Some(&s[start..]).filter(|m| is_marker(m))
}

/// Two tokens of markup with only blanks between.
fn two_markers(s: &str) -> Option<(&str, &str)> {
    let a = leading_marker(s)?;
    let rest = s.trim_start()[a.len()..].trim();
    let b = leading_marker(rest)?;
    (b.len() == rest.len()).then_some((a, b))
}

/// Whether a marker reads as thinking's.
fn thinking_like(m: &str) -> bool {
    let m = m.to_ascii_lowercase();
    ["think", "reason", "thought"].iter().any(|w| m.contains(w))
}

/// The marker that closes `open`, as markup closes its tags: `<x>` → `</x>`, `[X]` → `[/X]`,
/// `<|x|>` → `<|/x|>`, `<|START_X|>` → `<|END_X|>`.
fn closer(open: &str) -> Option<String> {
    if let Some(inner) = open.strip_prefix("<|").and_then(|s| s.strip_suffix("|>")) {
        if let Some(x) = inner.strip_prefix("START_") {
            return Some(format!("<|END_{x}|>"));
        }
        return Some(format!("<|/{inner}|>"));
    }
    if let Some(inner) = open.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
        return Some(format!("</{inner}>"));
    }
    if let Some(inner) = open.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        return Some(format!("[/{inner}]"));
    }
    None
}

/// The short `<…>` and `[…]` tokens in a template's text.
fn bracket_tokens(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, c) in template.char_indices() {
        let close = match c {
            '<' => '>',
            '[' => ']',
            _ => continue,
        };
        if let Some(e) = template[i..].find(close) {
            let t = &template[i..i + e + 1];
            if is_marker(t) && !t.contains(['{', '}', '%', '\'', '"', ' ']) && !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// Whether a template is Go's `text/template` (Ollama's `{{ .Messages }}`, `{{ range $i, $m := … }}`)
/// rather than Jinja.
fn is_go_template(t: &str) -> bool {
    [
        "{{ .",
        "{{- .",
        "{{.",
        "{{ range ",
        "{{- range ",
        "{{ end }}",
        "{{- end }}",
    ]
    .iter()
    .any(|m| t.contains(m))
        && !t.contains("{%")
}

/// The named family a template's text points to.
fn named_then(template: &str) -> Option<crate::families::FamilyId> {
    let f = crate::families::tool_format(&ModelFacts {
        name: "",
        template: Some(template),
        family: None,
    })?;
    (f.from == crate::families::Sign::Template).then_some(f.id)
}
