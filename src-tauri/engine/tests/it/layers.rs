//! The layers are one-way: no two modules name each other, directly or around a circle.
//! Read from the source (every `use` and every `crate::`/`super::` path outside `#[cfg(test)]`),
//! at every level: the crate's top modules, and the parts of every folder (`mcp/`, `mcp/host/`,
//! `chat/tool_call/`, `registry/`, …), in the engine and in the app crate (`src-tauri/`, the
//! Tauri adapter). At each level a part is one unit: its own files may name each other, and a
//! part may name its parent's facade (`mod.rs`), which names its parts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

type Module = Vec<String>;

#[test]
fn no_module_names_a_module_that_names_it_back() {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR"));
    // the app crate's modules are those of src-tauri/lib.rs: not the engine's folder, the app
    // frame's page, the binary's main.rs or the build script
    let app_skips = ["engine", "app-frame", "main.rs", "build.rs", "capabilities"];
    let crates = [
        ("the engine", Graph::read(&engine.join("src"), &[]), 40),
        (
            "the app",
            Graph::read(engine.parent().unwrap(), &app_skips),
            15,
        ),
    ];
    let mut found = Vec::new();
    for (name, graph, least) in &crates {
        assert!(
            graph.modules.len() > *least,
            "read only {} modules of {name}",
            graph.modules.len()
        );
        let levels = graph.levels();
        assert!(
            levels.len() > 3 || *name == "the app",
            "{name}: only {} levels",
            levels.len()
        );
        for level in &levels {
            for circle in graph.circles_at(level) {
                found.push(format!("{name}, {}", graph.explain(level, &circle)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "import circles (a lower module names a higher one; move what they share down):\n{}",
        found.join("\n")
    );
}

/// Every level is checked: a circle between the files of a folder deep in the tree is found.
#[test]
fn a_circle_deep_in_a_folder_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;").unwrap();
    std::fs::write(src.join("a/mod.rs"), "mod b;").unwrap();
    std::fs::write(src.join("a/b/mod.rs"), "mod x; mod y;").unwrap();
    std::fs::write(src.join("a/b/x.rs"), "use super::y::Y; pub struct X;").unwrap();
    std::fs::write(src.join("a/b/y.rs"), "use super::x::X; pub struct Y;").unwrap();
    let graph = Graph::read(src, &[]);
    let found: Vec<_> = graph
        .levels()
        .iter()
        .flat_map(|l| graph.circles_at(l))
        .collect();
    assert_eq!(found, vec![BTreeSet::from(["x", "y"].map(String::from))]);
    // a skipped folder is not read
    assert!(Graph::read(src, &["a"]).modules.len() == 1);
}

/// The markup layer is a crate of its own: it names nothing of the engine (not in its manifest,
/// not in its source), and its own modules name each other in no circle.
#[test]
fn the_markup_crate_names_nothing_of_the_engine() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/markup");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        !manifest.contains("switchboard-engine"),
        "crates/markup depends on the engine"
    );
    let files = crate::support::files_under(&root.join("src"), "rs");
    assert!(files.len() > 30, "read only {} files", files.len());
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(
            !text.contains("switchboard_engine"),
            "{} names the engine",
            f.display()
        );
    }
    let graph = Graph::read(&root.join("src"), &[]);
    let mut found = Vec::new();
    for level in graph.levels() {
        for circle in graph.circles_at(&level) {
            found.push(graph.explain(&level, &circle));
        }
    }
    assert!(
        found.is_empty(),
        "import circles in crates/markup:\n{}",
        found.join("\n")
    );
}

/// The check itself finds a circle: two parts that name each other, read from source text.
#[test]
fn a_circle_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod a; mod b; mod c;").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::Thing;").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct Thing; fn f() { super::c::g() }",
    )
    .unwrap();
    std::fs::write(
        src.join("c.rs"),
        "pub fn g() {} #[cfg(test)] mod tests { use crate::b::Thing; }\n\
         fn h() -> crate::a::Other { todo!() }",
    )
    .unwrap();
    let graph = Graph::read(src, &[]);
    let circles = graph.circles_at(&vec![]);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(
        circles[0],
        BTreeSet::from(["a", "b", "c"].map(String::from))
    );
    // the same without c → a: no circle (and c's test module does not count)
    std::fs::write(
        src.join("c.rs"),
        "pub fn g() {} #[cfg(test)] mod tests { use crate::a::X; }",
    )
    .unwrap();
    assert!(Graph::read(src, &[]).circles_at(&vec![]).is_empty());
}

struct Graph {
    modules: BTreeSet<Module>,
    /// Which modules each module names, with the path it named them by.
    names: BTreeMap<Module, BTreeMap<Module, String>>,
}

impl Graph {
    /// The modules of the crate whose root folder is `src`, but for the entries of `src` named
    /// in `skip`.
    fn read(src: &Path, skip: &[&str]) -> Graph {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(src).unwrap() {
            let p = entry.unwrap().path();
            if skip.iter().any(|s| p.file_name().is_some_and(|n| n == *s)) {
                continue;
            }
            if p.is_dir() {
                files.extend(crate::support::files_under(&p, "rs"));
            } else if p.extension().is_some_and(|e| e == "rs") {
                files.push(p);
            }
        }
        let module_of = |f: &Path| -> Module {
            let rel = f.strip_prefix(src).unwrap().with_extension("");
            let mut m: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                m.pop();
            }
            m
        };
        let parsed: Vec<(PathBuf, Module, syn::File)> = files
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                let file = syn::parse_file(&text)
                    .unwrap_or_else(|e| panic!("{} does not parse: {e}", f.display()));
                (f.clone(), module_of(f), file)
            })
            .collect();
        // files only tests compile (`#[cfg(test)] mod props;`, `#[cfg(test)] #[path = "x_tests.rs"]
        // mod tests;`) name what they like
        let mut test_only: BTreeSet<PathBuf> = BTreeSet::new();
        for (f, _, file) in &parsed {
            let dir = f.parent().unwrap();
            let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
            let own_dir = if matches!(stem.as_str(), "mod" | "lib" | "main") {
                dir.to_path_buf()
            } else {
                dir.join(&stem)
            };
            for item in &file.items {
                let syn::Item::Mod(md) = item else { continue };
                if md.content.is_some() || !is_test(&md.attrs) {
                    continue;
                }
                let name = md.ident.to_string();
                match path_attr(&md.attrs) {
                    Some(p) => test_only.insert(dir.join(p)),
                    None => {
                        // the module's file, or its folder and all in it
                        test_only.insert(own_dir.join(&name));
                        test_only.insert(own_dir.join(format!("{name}.rs")))
                    }
                };
            }
        }
        let parsed: Vec<(Module, syn::File)> = parsed
            .into_iter()
            .filter(|(f, _, _)| {
                !test_only
                    .iter()
                    .any(|t| f == t || t.extension().is_none() && f.starts_with(t))
            })
            .map(|(_, m, file)| (m, file))
            .collect();
        let modules: BTreeSet<Module> = parsed.iter().map(|(m, _)| m.clone()).collect();
        let mut names = BTreeMap::new();
        for (m, file) in &parsed {
            let mut v = PathVisitor {
                module: m.clone(),
                modules: &modules,
                named: BTreeMap::new(),
            };
            v.visit_file(file);
            names.insert(m.clone(), v.named);
        }
        Graph { modules, names }
    }

    /// Every module that has parts (the crate's root among them): the levels checked.
    fn levels(&self) -> Vec<Module> {
        let mut out: Vec<Module> = vec![vec![]];
        for m in &self.modules {
            if !m.is_empty()
                && self
                    .modules
                    .iter()
                    .any(|c| c.len() == m.len() + 1 && c.starts_with(m))
            {
                out.push(m.clone());
            }
        }
        out
    }

    /// The unit of `m` at `level`: the part of `level` that holds it, unless it is `level` itself
    /// or outside it.
    fn unit(level: &Module, m: &Module) -> Option<String> {
        (m.len() > level.len() && m.starts_with(level)).then(|| m[level.len()].clone())
    }

    fn edges_at(&self, level: &Module) -> BTreeMap<String, BTreeSet<String>> {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, named) in &self.names {
            let Some(a) = Graph::unit(level, from) else {
                continue;
            };
            for to in named.keys() {
                if let Some(b) = Graph::unit(level, to).filter(|b| *b != a) {
                    edges.entry(a.clone()).or_default().insert(b);
                }
            }
        }
        edges
    }

    /// The sets of parts of `level` that reach each other (strongly connected, more than one).
    fn circles_at(&self, level: &Module) -> Vec<BTreeSet<String>> {
        let edges = self.edges_at(level);
        let reach = |from: &String| {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.clone()];
            while let Some(n) = todo.pop() {
                for next in edges.get(&n).into_iter().flatten() {
                    if seen.insert(next.clone()) {
                        todo.push(next.clone());
                    }
                }
            }
            seen
        };
        let reached: BTreeMap<&String, BTreeSet<String>> =
            edges.keys().map(|k| (k, reach(k))).collect();
        let mut circles: Vec<BTreeSet<String>> = Vec::new();
        for (a, from_a) in &reached {
            if !from_a.contains(*a) || circles.iter().any(|c| c.contains(*a)) {
                continue;
            }
            let circle: BTreeSet<String> = from_a
                .iter()
                .filter(|b| reached.get(b).is_some_and(|r| r.contains(*a)))
                .cloned()
                .collect();
            circles.push(circle);
        }
        circles
    }

    /// Which module of the circle names which, and by what path.
    fn explain(&self, level: &Module, circle: &BTreeSet<String>) -> String {
        let mut lines = vec![format!(
            "in {}: {}",
            if level.is_empty() {
                "its top level".to_string()
            } else {
                level.join("/")
            },
            circle.iter().cloned().collect::<Vec<_>>().join(", ")
        )];
        for (from, named) in &self.names {
            let Some(a) = Graph::unit(level, from).filter(|a| circle.contains(a)) else {
                continue;
            };
            for (to, path) in named {
                if let Some(b) = Graph::unit(level, to).filter(|b| *b != a && circle.contains(b)) {
                    lines.push(format!("  {} -> {b}: {path}", from.join("/")));
                }
            }
        }
        lines.join("\n")
    }
}

/// `#[path = "…"]`'s file.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("path"))
        .and_then(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// Every module a file names by a `crate::`, `super::` or `self::` path, in `use` or in code.
struct PathVisitor<'a> {
    /// The module being read (an inline `mod x { … }` is entered).
    module: Module,
    modules: &'a BTreeSet<Module>,
    named: BTreeMap<Module, String>,
}

impl PathVisitor<'_> {
    fn name(&mut self, segments: &[String]) {
        let Some(first) = segments.first() else {
            return;
        };
        let mut at: Module = match first.as_str() {
            "crate" => vec![],
            "self" => self.module.clone(),
            "super" => self.module.clone(),
            _ => return,
        };
        let mut rest = &segments[usize::from(first != "super")..];
        while rest.first().is_some_and(|s| s == "super") {
            at.pop();
            rest = &rest[1..];
        }
        let mut target = at.clone();
        let mut best = at;
        for s in rest {
            target.push(s.clone());
            if self.modules.contains(&target) {
                best = target.clone();
            }
        }
        if best != self.module && !self.module.starts_with(&best) {
            self.named
                .entry(best)
                .or_insert_with(|| segments.join("::"));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.name(prefix);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.name(prefix);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.name(prefix),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for PathVisitor<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            _ => &[],
        };
        if is_test(attrs) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.name(&segments);
        syn::visit::visit_path(self, p);
    }
}
