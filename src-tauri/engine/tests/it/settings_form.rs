//! The window's forms checked against the table of settings the engine exports
//! (`settings::schema`): every number input of the settings, chat-settings and server forms names
//! a bounded row (`data-setting`), and none carries a range of its own (`min`/`max`), so no limit
//! is written twice; a select that names a row of a few values offers exactly its values (besides
//! an empty "default" one). `ui/index.html` is read with html5ever's tokenizer.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, EndTag, StartTag, TagToken, Token, TokenSink, TokenSinkResult, Tokenizer,
    TokenizerOpts,
};

/// The forms whose number inputs must take their bounds from the table.
const FORMS: [&str; 3] = ["settings-form", "chat-settings-form", "server-form"];

/// An `<input>` or a `<select>`: the form it is in (by id), its attributes, and a select's
/// options' values (`None`: an option without one).
#[derive(Debug)]
struct Input {
    form: Option<String>,
    attrs: BTreeMap<String, String>,
    options: Vec<Option<String>>,
}

#[derive(Default)]
struct Inputs {
    form: RefCell<Option<String>>,
    /// The select being read.
    select: RefCell<Option<Input>>,
    found: RefCell<Vec<Input>>,
}

impl TokenSink for Inputs {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let TagToken(tag) = token else {
            return TokenSinkResult::Continue;
        };
        let attrs: BTreeMap<String, String> = tag
            .attrs
            .iter()
            .map(|a| (a.name.local.to_string(), a.value.to_string()))
            .collect();
        match (tag.kind, &*tag.name) {
            (StartTag, "form") => *self.form.borrow_mut() = attrs.get("id").cloned(),
            (EndTag, "form") => *self.form.borrow_mut() = None,
            (StartTag, "input") => self.found.borrow_mut().push(Input {
                form: self.form.borrow().clone(),
                attrs,
                options: Vec::new(),
            }),
            (StartTag, "select") => {
                *self.select.borrow_mut() = Some(Input {
                    form: self.form.borrow().clone(),
                    attrs,
                    options: Vec::new(),
                })
            }
            (StartTag, "option") => {
                if let Some(select) = self.select.borrow_mut().as_mut() {
                    select.options.push(attrs.get("value").cloned());
                }
            }
            (EndTag, "select") => {
                if let Some(select) = self.select.borrow_mut().take() {
                    self.found.borrow_mut().push(select);
                }
            }
            // as the tree builder would: their content is text, not tags
            (StartTag, "script") => return TokenSinkResult::RawData(RawKind::ScriptData),
            (StartTag, "style") => return TokenSinkResult::RawData(RawKind::Rawtext),
            (StartTag, "textarea" | "title") => return TokenSinkResult::RawData(RawKind::Rcdata),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

fn inputs(html: &str) -> Vec<Input> {
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from_slice(html));
    let tokenizer = Tokenizer::new(Inputs::default(), TokenizerOpts::default());
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    tokenizer.sink.found.take()
}

/// What is wrong with `html`'s forms against the table: one line per problem.
fn problems(html: &str, table: &serde_json::Value) -> Vec<String> {
    let mut found = Vec::new();
    for input in inputs(html) {
        let attr = |n: &str| input.attrs.get(n).map(String::as_str);
        let id = attr("id").unwrap_or("(no id)");
        let is_select = !input.options.is_empty();
        if let Some(key) = attr("data-setting") {
            let row = &table[key];
            let kind = if is_select { "choices" } else { "min" };
            if row.get(kind).is_none() {
                found.push(format!(
                    "#{id}: data-setting=\"{key}\" names no setting with {kind}"
                ));
            } else if is_select {
                let offered: Vec<_> = input
                    .options
                    .iter()
                    .filter(|o| o.as_deref() != Some(""))
                    .collect();
                let choices: Vec<_> = row["choices"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().map(String::from))
                    .collect();
                if offered.len() != choices.len() || offered.iter().any(|o| !choices.contains(o)) {
                    found.push(format!(
                        "#{id}: offers {offered:?}, the engine's choices are {choices:?}"
                    ));
                }
            }
        }
        let in_a_form = input.form.as_deref().is_some_and(|f| FORMS.contains(&f));
        if !in_a_form || attr("type") != Some("number") {
            continue;
        }
        if attr("data-setting").is_none() {
            found.push(format!("#{id}: a number input without data-setting"));
        }
        for bound in ["min", "max"] {
            if attr(bound).is_some() {
                found.push(format!("#{id}: a {bound} of its own"));
            }
        }
    }
    found
}

#[test]
fn the_windows_number_inputs_take_their_bounds_from_the_engines_table() {
    let table = switchboard_engine::settings::schema();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/index.html");
    let html = std::fs::read_to_string(&file).unwrap();
    assert_eq!(problems(&html, &table), Vec::<String>::new());
    // the inputs are read: each bounded setting the forms edit is there
    let named: Vec<_> = inputs(&html)
        .into_iter()
        .filter_map(|i| Some((i.form?, i.attrs.get("data-setting")?.clone())))
        .collect();
    for (form, key) in [
        ("settings-form", "maxIterations"),
        ("settings-form", "maxOfferedTools"),
        ("settings-form", "imageMaxSide"),
        ("settings-form", "temperature"),
        ("settings-form", "numCtx"),
        ("chat-settings-form", "temperature"),
        ("chat-settings-form", "numCtx"),
        ("server-form", "toolTimeoutSecs"),
        ("settings-form", "contextPolicy"),
        ("chat-settings-form", "contextPolicy"),
    ] {
        assert!(
            named.iter().any(|(f, k)| f == form && k == key),
            "no {key} in #{form}: {named:?}"
        );
    }
}

/// The check finds each kind of problem (so the test above can fail).
#[test]
fn a_form_with_its_own_range_or_an_unknown_key_is_found() {
    let table = switchboard_engine::settings::schema();
    let html = r#"<form id="settings-form">
        <textarea><input type="number" min="1"></textarea>
        <input id="a" type="number" data-setting="maxIterations" min="1" max="100">
        <input id="b" type="number">
        <input id="c" type="number" data-setting="maxIteration">
        <select id="s" data-setting="contextPolicy"><option value="">Default</option>
          <option value="summarise">S</option><option value="later">L</option></select>
        <select id="t" data-setting="maxIterations"><option value="1">1</option></select>
        </form><input id="d" type="number" min="0">
        <script>const s = '<input id="e" type="number" min="1">';</script>"#;
    assert_eq!(
        problems(html, &table),
        [
            "#a: a min of its own",
            "#a: a max of its own",
            "#b: a number input without data-setting",
            "#c: data-setting=\"maxIteration\" names no setting with min",
            "#s: offers [Some(\"summarise\"), Some(\"later\")], the engine's choices are \
             [Some(\"summarise\"), Some(\"dropOldest\"), Some(\"ask\")]",
            "#t: data-setting=\"maxIterations\" names no setting with choices",
        ]
    );
}
