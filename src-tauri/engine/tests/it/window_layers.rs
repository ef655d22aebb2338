//! The window's code is layered one way too (read from `ui/js`'s import lines):
//! - only `ipc.js` talks to the Rust side (`window.__TAURI__`, `invoke`, `Channel`);
//! - a view (`views/`) is DOM only: it names neither `ipc.js`, nor a controller, nor `app.js`;
//! - a controller (`controllers/`) may name `ipc.js` and views, never `app.js`, the composition
//!   root that names everything;
//! - no two modules import each other, directly or around a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[test]
fn the_windows_modules_are_layered_one_way() {
    let ui = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/js");
    let modules = read(&ui);
    assert!(
        modules.len() > 40,
        "read only {} modules of ui/js",
        modules.len()
    );
    assert!(
        modules
            .keys()
            .filter(|m| m.starts_with("controllers/"))
            .count()
            >= 5,
        "the controllers were not found"
    );
    let found = problems(&modules);
    assert!(
        found.is_empty(),
        "the window's layers:\n{}",
        found.join("\n")
    );
}

/// The check finds each kind of problem in a small tree written for it.
#[test]
fn the_window_check_finds_what_breaks_the_layers() {
    let dir = tempfile::tempdir().unwrap();
    let ui = dir.path();
    for d in ["views", "controllers"] {
        std::fs::create_dir_all(ui.join(d)).unwrap();
    }
    let write = |p: &str, text: &str| std::fs::write(ui.join(p), text).unwrap();
    write(
        "ipc.js",
        "const core = window.__TAURI__.core;\nexport const x = () => core.invoke('x');",
    );
    write(
        "dom.js",
        "export const $ = (s) => document.querySelector(s);",
    );
    write(
        "app.js",
        "import * as ipc from './ipc.js';\nimport { C } from './controllers/c.js';",
    );
    write(
        "controllers/c.js",
        "import * as ipc from '../ipc.js';\nimport { V } from '../views/v.js';\nexport class C {}",
    );
    write(
        "views/v.js",
        "import { $ } from '../dom.js';\nexport class V {}",
    );
    assert_eq!(problems(&read(ui)), Vec::<String>::new());

    write(
        "views/v.js",
        "import * as ipc from '../ipc.js';\nexport class V {}",
    );
    write("views/w.js", "const i = window.__TAURI__.core.invoke;");
    write("controllers/d.js", "import { go } from '../app.js';");
    write(
        "views/a.js",
        "import { B } from './b.js';\nexport const A = 1;",
    );
    write(
        "views/b.js",
        "import { A } from \"./a.js\";\nexport const B = 2;",
    );
    let found = problems(&read(ui));
    let has = |what: &str| found.iter().any(|f| f.contains(what));
    assert!(has("views/v.js names ipc.js"), "{found:?}");
    assert!(has("views/w.js talks to the Rust side"), "{found:?}");
    assert!(has("controllers/d.js names app.js"), "{found:?}");
    assert!(has("circle: views/a.js → views/b.js"), "{found:?}");
    assert_eq!(found.len(), 4, "{found:?}");
}

/// One module of the window: what it imports (paths under `ui/js`), and whether it talks to the
/// Rust side itself.
#[derive(Debug)]
struct Module {
    imports: BTreeSet<String>,
    talks: bool,
}

/// Each module by its path under `ui/js` (with `/`).
fn read(ui: &Path) -> BTreeMap<String, Module> {
    crate::support::files_under(ui, "js")
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            let dir = file.parent().unwrap();
            let imports = imported(&text)
                .into_iter()
                .filter(|spec| spec.starts_with('.'))
                .map(|spec| rel(ui, &normalise(&dir.join(spec))))
                .collect();
            let talks = text.contains("__TAURI__");
            (rel(ui, &file), Module { imports, talks })
        })
        .collect()
}

/// What breaks the layers, one line each.
fn problems(modules: &BTreeMap<String, Module>) -> Vec<String> {
    let mut found = Vec::new();
    for (name, m) in modules {
        if m.talks && name != "ipc.js" {
            found.push(format!("{name} talks to the Rust side (only ipc.js may)"));
        }
        let view = name.starts_with("views/");
        let controller = name.starts_with("controllers/");
        for i in &m.imports {
            let upward = i == "app.js" && (view || controller)
                || view && (i == "ipc.js" || i.starts_with("controllers/"));
            if upward {
                found.push(format!("{name} names {i}"));
            }
        }
    }
    found.extend(
        circles(modules)
            .into_iter()
            .map(|c| format!("circle: {}", c.join(" → "))),
    );
    found
}

/// Every circle of imports, once each (as the path from its least module around to itself).
fn circles(modules: &BTreeMap<String, Module>) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = Vec::new();
    let mut seen = BTreeSet::new();
    for start in modules.keys() {
        // paths from `start` back to itself through modules after it in order
        let mut stack = vec![vec![start.clone()]];
        while let Some(path) = stack.pop() {
            let at = path.last().unwrap();
            for next in modules.get(at).map(|m| &m.imports).into_iter().flatten() {
                if next == start {
                    if seen.insert(path.iter().cloned().collect::<BTreeSet<_>>()) {
                        found.push(path.clone());
                    }
                } else if next > start && !path.contains(next) && modules.contains_key(next) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push(p);
                }
            }
        }
    }
    found
}

/// The specifiers of a module's `… from '…'`, `import '…'` and `import('…')` (an import list may
/// span lines: only what follows `from` counts).
fn imported(text: &str) -> Vec<String> {
    let mut specs = Vec::new();
    for lead in ["from ", "import ", "import("] {
        for (i, _) in text.match_indices(lead) {
            let rest = &text[i + lead.len()..];
            let Some(q) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                continue;
            };
            if let Some(end) = rest[1..].find(q) {
                specs.push(rest[1..1 + end].to_string());
            }
        }
    }
    specs
}

fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

fn rel(ui: &Path, file: &Path) -> String {
    let ui = normalise(ui);
    normalise(file)
        .strip_prefix(&ui)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/")
}
