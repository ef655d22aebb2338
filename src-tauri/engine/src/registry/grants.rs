//! The folders and files an install's sandbox grants, each with why: the user's own picks (a
//! path field's value, the form's extra folders), what the app derives (a bundle's own folder,
//! read; the folder of a database file, or of a file not made yet, when it holds nothing else)
//! and what it proposes (the read-only settings a well-known tool reads: [`READ_PROPOSALS`]),
//! all listed in the preview. A path field's default is a suggestion, never a grant: the field
//! starts empty. A write grant of `/`, home, or a place that holds what runs when the user logs
//! in ([`STARTUP_PLACES`]) needs the user to type that folder again.
//!
//! Landlock grants what exists: a file not made yet cannot be granted, and a file granted alone
//! does not cover the files its program makes beside it (SQLite's `-journal`, `-wal`, `-shm`).
//! So a file field whose file does not exist yet, or whose name says it is a database
//! ([`DATABASE_EXTENSIONS`]), grants its folder for writing when that folder holds nothing but
//! that file and what its program writes beside it (names that start with the file's); else the
//! file alone (when it exists), and a note that says its program needs a folder of its own,
//! offering that folder ([`FileNeedsFolder`]: the user allows it with `Choices::write`).
//!
//! A grant's why is a `GrantView`: the bundle's folder, read; a path field's value, read and write;
//! a listed folder, read, or write (`Choices::write`); a proposal the user may leave out
//! (`Choices::declined`; `READ_PROPOSALS` by package identifier or command, e.g. git:
//! `~/.gitconfig`, `~/.config/git`). `STARTUP_PLACES` holds the shell and desktop start-up files,
//! `~/.config/autostart`, `~/.config/systemd/user`, `~/.local/bin`, `~/bin`, …; `write_meaning`: a
//! write grant of `/` or of a place that is, holds or is inside one is refused unless the user
//! typed that path in `Choices::confirm_write` (the form's `confirmWrite` field), and its row then
//! says what it means.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::form::{expand_home, Field, FieldKind, FormError, Given};

/// Places under home whose files decide what runs when the user logs in, opens a terminal or
/// starts their desktop, or which program a name starts: a server that may write one (or a
/// folder holding one, or inside one) can run anything as the user, outside every sandbox, the
/// next time they log in (the app's own PATH lookup runs the login shell too). Each with what
/// writing there lets a server change.
pub const STARTUP_PLACES: &[(&str, &str)] = &[
    (".profile", LOGIN),
    (".bash_profile", LOGIN),
    (".bash_login", LOGIN),
    (".bashrc", LOGIN),
    (".bash_logout", LOGIN),
    (".zshenv", LOGIN),
    (".zprofile", LOGIN),
    (".zshrc", LOGIN),
    (".zlogin", LOGIN),
    (".zlogout", LOGIN),
    (".config/fish", LOGIN),
    (".pam_environment", LOGIN),
    (".config/environment.d", LOGIN),
    (".xprofile", DESKTOP),
    (".xsessionrc", DESKTOP),
    (".xsession", DESKTOP),
    (".xinitrc", DESKTOP),
    (".config/autostart", DESKTOP),
    (".config/systemd/user", SERVICES),
    (".local/share/applications", MENUS),
    (".local/bin", PROGRAMS),
    ("bin", PROGRAMS),
];

const LOGIN: &str = "what runs when you log in or open a terminal";
const DESKTOP: &str = "what starts with your desktop";
const SERVICES: &str = "the services that start when you log in";
const MENUS: &str = "what your desktop's menus and file types start";
const PROGRAMS: &str = "the programs that run by name, yours and Switchboard's";

/// What a server that may write `path` can change of what runs outside every sandbox, when
/// `path` is `/`, or is, holds or is inside a place of [`STARTUP_PLACES`] under `home` (links
/// followed either way): "this lets it change …". `None` for any other place.
pub fn write_meaning(path: &Path, home: Option<&Path>) -> Option<String> {
    let forms = |p: &Path| -> Vec<PathBuf> {
        let mut v = vec![p.to_path_buf()];
        v.extend(p.canonicalize().ok().filter(|r| r != p));
        v
    };
    let asked = forms(path);
    if asked.iter().any(|p| p.parent().is_none()) {
        return Some(
            "this lets it change everything you can, what runs when you log in too".into(),
        );
    }
    let home = home?;
    let mut what: Vec<&str> = Vec::new();
    for (rel, means) in STARTUP_PLACES {
        let place = forms(&home.join(rel));
        let meets = asked
            .iter()
            .any(|a| place.iter().any(|s| s.starts_with(a) || a.starts_with(s)));
        if meets && !what.contains(means) {
            what.push(means);
        }
    }
    (!what.is_empty()).then(|| format!("this lets it change {}", words(&what)))
}

fn words(list: &[&str]) -> String {
    match list {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
    }
}

/// Why a grant is there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum GrantReason {
    /// The bundle's own folder (its code): derived by the app.
    BundleFolder,
    /// What the user gave the form's field `key` (a folder or a file).
    #[serde(rename_all = "camelCase")]
    Field { key: String, label: String },
    /// The folder of the file the user gave field `key`, which holds nothing else: the file
    /// does not exist yet (`database`: false), or is a database whose program writes beside it.
    #[serde(rename_all = "camelCase")]
    FileFolder {
        key: String,
        label: String,
        file: String,
        database: bool,
    },
    /// A folder or file the user listed for it to read.
    Picked,
    /// A folder or file the user listed for it to write (`--write`, or the preview's offer of
    /// a database's folder).
    Written,
    /// Read-only settings the tool it runs reads (`tool`: git), proposed by the app: the user
    /// may leave them out (`Choices::declined`).
    #[serde(rename_all = "camelCase")]
    Proposed { tool: String },
}

/// A file field's file whose program writes beside it, or that does not exist yet, in a folder
/// that holds other things: the sandbox cannot let it write there unless the user allows the
/// whole folder (the preview offers it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileNeedsFolder {
    pub key: String,
    pub label: String,
    pub file: String,
    pub folder: String,
    /// Its name says it is a database (SQLite writes `-journal`, `-wal`, `-shm` beside it).
    pub database: bool,
    /// It exists (then it is granted alone, and its program may fail to write beside it);
    /// else nothing is granted for it.
    pub exists: bool,
}

/// File names of databases whose program writes files beside them (SQLite: `-journal`, `-wal`,
/// `-shm`; DuckDB: `.wal`).
pub const DATABASE_EXTENSIONS: &[&str] = &[
    "db", "sqlite", "sqlite3", "db3", "s3db", "sl3", "sdb", "duckdb",
];

/// Whether `p`'s name says it is a database ([`DATABASE_EXTENSIONS`]).
pub fn looks_like_database(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| DATABASE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// Whether `folder` holds nothing but `file` and what its program writes beside it (entries
/// whose names start with the file's name): a folder the user keeps only for it.
fn holds_only(folder: &Path, file: &Path) -> bool {
    let Some(name) = file.file_name() else {
        return false;
    };
    let name = name.as_encoded_bytes();
    match std::fs::read_dir(folder) {
        Ok(entries) => entries.flatten().all(|e| {
            let n = e.file_name();
            n.as_encoded_bytes().starts_with(name)
        }),
        Err(_) => false,
    }
}

/// Read-only settings well-known tools read, proposed with a server that runs one (matched by
/// its package's identifier, or its command): without them the tool fails or misbehaves in
/// its sandbox (git: "unable to access '~/.gitconfig'"). Credentials inside them stay
/// protected (`~/.config/git/credentials`: `mcp/sandbox/protect.rs`). Add a tool here.
pub const READ_PROPOSALS: &[ReadProposal] = &[ReadProposal {
    tool: "git",
    packages: &[
        "mcp-server-git",
        "@modelcontextprotocol/server-git",
        "@cyanheads/git-mcp-server",
        "git-mcp-server",
        "@mseep/git-mcp-server",
    ],
    commands: &["git"],
    paths: &["~/.gitconfig", "~/.config/git"],
}];

/// One row of [`READ_PROPOSALS`].
#[derive(Debug, Clone, Copy)]
pub struct ReadProposal {
    pub tool: &'static str,
    /// Package identifiers (npm, PyPI, NuGet; letter case ignored).
    pub packages: &'static [&'static str],
    /// Commands (the program's file name).
    pub commands: &'static [&'static str],
    /// Files and folders it reads (`~` is home).
    pub paths: &'static [&'static str],
}

/// The read grants proposed for a server that runs package `package` (its identifier) with
/// `command`: those of [`READ_PROPOSALS`] that fit and exist here, as full paths, but those the
/// user `declined` and anything protected itself.
pub fn proposed(
    package: Option<&str>,
    command: &str,
    home: Option<&Path>,
    declined: &[String],
) -> Vec<GrantView> {
    let program = Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let declined: Vec<PathBuf> = declined.iter().map(|d| expand_home(d, home)).collect();
    let protected = crate::mcp::sandbox::protected(home, &[]);
    let mut out: Vec<GrantView> = Vec::new();
    for r in READ_PROPOSALS {
        let fits = package.is_some_and(|p| r.packages.iter().any(|k| k.eq_ignore_ascii_case(p)))
            || r.commands.contains(&program);
        if !fits {
            continue;
        }
        for p in r.paths {
            if p.starts_with('~') && home.is_none() {
                continue;
            }
            let path = expand_home(p, home);
            if !path.exists()
                || declined.contains(&path)
                || protected.iter().any(|x| path.starts_with(x))
                || out.iter().any(|g| Path::new(&g.path) == path)
            {
                continue;
            }
            out.push(GrantView {
                path: path.display().to_string(),
                write: false,
                why: GrantReason::Proposed {
                    tool: r.tool.into(),
                },
                means: None,
            });
        }
    }
    out
}

/// One grant of an install's sandbox, as the preview lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantView {
    pub path: String,
    /// Read and write (else read only).
    pub write: bool,
    pub why: GrantReason,
    /// For a write grant of a place that decides what runs when the user logs in (confirmed):
    /// what that lets it change.
    pub means: Option<String>,
}

/// An install's grants, and the files among them that need a folder of their own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants {
    pub list: Vec<GrantView>,
    pub needs_folder: Vec<FileNeedsFolder>,
}

/// What the user chose that grants something, besides the form's fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct Picks<'a> {
    /// Folders and files it may also read.
    pub read: &'a [String],
    /// Folders and files it may also write.
    pub write: &'a [String],
    /// Write grants confirmed (typed again) although they decide what runs at login.
    pub confirmed: &'a [String],
}

/// Every grant of an install: the bundle's own folder (read), each path field's value (read and
/// write: the user gave the server that place; for a file that does not exist yet or a
/// database, its folder when it holds nothing else, see the module's words), the folders the
/// user listed to write, then to read. A write grant of `/`, home or a start-up place
/// ([`write_meaning`]) is refused unless `picks.confirmed` holds exactly that path (`~`
/// expanded), and then its row says what it means.
pub fn grants(
    fields: &[Field],
    given: &BTreeMap<String, Given>,
    bundle_dir: Option<&Path>,
    picks: Picks<'_>,
    home: Option<&Path>,
) -> Result<Grants, FormError> {
    let mut out: Vec<GrantView> = Vec::new();
    let mut needs_folder = Vec::new();
    if let Some(d) = bundle_dir {
        out.push(GrantView {
            path: d.display().to_string(),
            write: false,
            why: GrantReason::BundleFolder,
            means: None,
        });
    }
    let confirmed: Vec<PathBuf> = picks
        .confirmed
        .iter()
        .map(|c| c.trim())
        .filter(|c| !c.is_empty())
        .map(|c| expand_home(c, home))
        .collect();
    let written: Vec<PathBuf> = picks
        .write
        .iter()
        .map(|w| w.trim())
        .filter(|w| !w.is_empty())
        .map(|w| expand_home(w, home))
        .collect();
    let check = |path: &Path, label: &str, shown: &str| -> Result<Option<String>, FormError> {
        let means = write_meaning(path, home);
        if let Some(m) = &means {
            if !confirmed.iter().any(|c| c == path) {
                return Err(FormError {
                    field: CONFIRM_FIELD.into(),
                    message: format!(
                        "{label}: letting it change {shown} — {m}. To allow it, type {shown} in \
                         “Confirm folders it may change”."
                    ),
                });
            }
        }
        Ok(means)
    };
    let push = |out: &mut Vec<GrantView>, g: GrantView| {
        if !out.iter().any(|v| v.write && v.path == g.path) {
            out.push(g);
        }
    };
    for f in fields {
        if !matches!(
            f.kind,
            FieldKind::File | FieldKind::Directory | FieldKind::Path
        ) {
            continue;
        }
        let Some(g) = given.get(&f.key) else { continue };
        for p in g.items().into_iter().filter(|p| !p.is_empty()) {
            let path = expand_home(&p, home);
            let database = looks_like_database(&path);
            let exists = path.exists();
            let field = || GrantReason::Field {
                key: f.key.clone(),
                label: f.label.clone(),
            };
            if path.is_dir() || (exists && !database) {
                let means = check(&path, &f.label, &p)?;
                push(
                    &mut out,
                    GrantView {
                        path: p,
                        write: true,
                        why: field(),
                        means,
                    },
                );
                continue;
            }
            // a file not made yet, or a database: its folder, when it is the file's own
            let Some(folder) = path.parent().filter(|d| d.is_dir()) else {
                return Err(FormError {
                    field: f.key.clone(),
                    message: format!("{}: the folder of {p} does not exist.", f.label),
                });
            };
            let allowed = written.iter().any(|w| folder.starts_with(w));
            if !allowed && holds_only(folder, &path) && write_meaning(folder, home).is_none() {
                push(
                    &mut out,
                    GrantView {
                        path: folder.display().to_string(),
                        write: true,
                        why: GrantReason::FileFolder {
                            key: f.key.clone(),
                            label: f.label.clone(),
                            file: p.clone(),
                            database,
                        },
                        means: None,
                    },
                );
                continue;
            }
            if exists && !allowed {
                let means = check(&path, &f.label, &p)?;
                push(
                    &mut out,
                    GrantView {
                        path: p.clone(),
                        write: true,
                        why: field(),
                        means,
                    },
                );
            }
            if !allowed {
                needs_folder.push(FileNeedsFolder {
                    key: f.key.clone(),
                    label: f.label.clone(),
                    file: p,
                    folder: folder.display().to_string(),
                    database,
                    exists,
                });
            }
        }
    }
    for (w, typed) in written.iter().zip(picks.write.iter().map(|w| w.trim())) {
        if !w.is_absolute() || !w.exists() {
            return Err(FormError {
                field: "write".into(),
                message: format!("{typed} is not an existing folder or file (give its full path)."),
            });
        }
        let means = check(w, "Folders it may write", typed)?;
        push(
            &mut out,
            GrantView {
                path: w.display().to_string(),
                write: true,
                why: GrantReason::Written,
                means,
            },
        );
    }
    for p in picks.read {
        if !out.iter().any(|v| v.path == *p) {
            out.push(GrantView {
                path: p.clone(),
                write: false,
                why: GrantReason::Picked,
                means: None,
            });
        }
    }
    Ok(Grants {
        list: out,
        needs_folder,
    })
}

/// The form's field a write grant is confirmed in (the window's “Confirm folders it may
/// change”; `Choices::confirm_write`).
pub const CONFIRM_FIELD: &str = "confirmWrite";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::form::Target;

    fn field(key: &str, kind: FieldKind) -> Field {
        Field {
            key: key.into(),
            label: key.into(),
            description: None,
            kind,
            choices: vec![],
            required: false,
            secret: false,
            multiple: false,
            default: None,
            placeholder: None,
            min: None,
            max: None,
            target: Target::Setting(key.into()),
        }
    }

    #[test]
    fn a_write_grant_of_what_runs_at_login_needs_the_folder_typed() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap();
        let h = Some(home.as_path());
        for (rel, risky) in [
            ("", true),
            (".config", true),
            (".config/autostart", true),
            (".config/autostart/x", true),
            (".config/fish/conf.d", true),
            (".local", true),
            (".local/bin", true),
            (".bashrc", true),
            ("bin", true),
            ("Documents", false),
            (".config/app", false),
            (".local/share/app", false),
        ] {
            let p = home.join(rel);
            assert_eq!(write_meaning(&p, h).is_some(), risky, "{rel}");
        }
        assert!(write_meaning(Path::new("/"), h).is_some());
        assert!(write_meaning(Path::new("/"), None).is_some());
        // a link to home is home
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&home, &link).unwrap();
        std::fs::create_dir_all(home.join("Documents")).unwrap();
        assert!(write_meaning(&link, h).is_some());
        assert_eq!(
            write_meaning(&home.join(".profile"), h).unwrap(),
            "this lets it change what runs when you log in or open a terminal"
        );

        let fields = [
            field("dir", FieldKind::Directory),
            field("n", FieldKind::Text),
        ];
        let given: BTreeMap<String, Given> = [
            ("dir".to_string(), Given::Text(home.display().to_string())),
            ("n".to_string(), Given::Text("/".into())),
        ]
        .into();
        let g = |confirmed: &[&str]| {
            let c: Vec<String> = confirmed.iter().map(|s| s.to_string()).collect();
            grants(
                &fields,
                &given,
                None,
                Picks {
                    confirmed: &c,
                    ..Default::default()
                },
                h,
            )
            .map(|g| g.list)
        };
        let e = g(&[]).unwrap_err();
        assert_eq!(e.field, CONFIRM_FIELD);
        assert!(e.message.contains("log in"), "{}", e.message);
        // another folder typed is no confirmation
        assert!(g(&["~/Documents"]).is_err());
        // home typed, as `~` or in full: granted, and its row says what it means
        for typed in [
            "~",
            &home.display().to_string(),
            &format!("{}/", home.display()),
        ] {
            let ok = g(&[typed]).unwrap();
            assert_eq!(ok.len(), 1, "a text field's value is no grant");
            assert!(ok[0].write && ok[0].means.as_deref().unwrap().contains("log in"));
        }
    }

    #[test]
    fn every_grant_is_listed_with_why() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join("data")).unwrap();
        let mut dirs = field("dirs", FieldKind::Directory);
        dirs.multiple = true;
        let data = home.join("data").display().to_string();
        let given: BTreeMap<String, Given> = [(
            "dirs".to_string(),
            Given::List(vec![data.clone(), data.clone()]),
        )]
        .into();
        let out = grants(
            &[dirs],
            &given,
            Some(Path::new("/b/x/1.0.0-t")),
            Picks {
                read: &["/usr/share/dict".into()],
                ..Default::default()
            },
            Some(&home),
        )
        .unwrap()
        .list;
        assert_eq!(
            out,
            [
                GrantView {
                    path: "/b/x/1.0.0-t".into(),
                    write: false,
                    why: GrantReason::BundleFolder,
                    means: None
                },
                GrantView {
                    path: data,
                    write: true,
                    why: GrantReason::Field {
                        key: "dirs".into(),
                        label: "dirs".into()
                    },
                    means: None
                },
                GrantView {
                    path: "/usr/share/dict".into(),
                    write: false,
                    why: GrantReason::Picked,
                    means: None
                },
            ]
        );
    }

    #[test]
    fn a_database_or_a_file_not_made_yet_gets_its_folder_only_when_the_folder_is_its_own() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap();
        let (own, shared, fresh) = (home.join("own"), home.join("shared"), home.join("fresh"));
        for d in [&own, &shared, &fresh] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(own.join("notes.db"), "").unwrap();
        std::fs::write(own.join("notes.db-wal"), "").unwrap();
        std::fs::write(shared.join("notes.db"), "").unwrap();
        std::fs::write(shared.join("taxes.pdf"), "").unwrap();
        std::fs::write(shared.join("list.txt"), "").unwrap();
        let db = field("db", FieldKind::File);
        let g = |value: &Path, write: &[String]| {
            let given: BTreeMap<String, Given> =
                [("db".to_string(), Given::Text(value.display().to_string()))].into();
            grants(
                std::slice::from_ref(&db),
                &given,
                None,
                Picks {
                    write,
                    ..Default::default()
                },
                Some(&home),
            )
        };
        // a database alone in its folder (and its journal): the folder, said why
        let got = g(&own.join("notes.db"), &[]).unwrap();
        assert_eq!(got.list.len(), 1);
        assert_eq!(got.list[0].path, own.display().to_string());
        assert!(got.list[0].write && got.needs_folder.is_empty());
        assert!(matches!(
            &got.list[0].why,
            GrantReason::FileFolder { database: true, file, .. } if file.ends_with("own/notes.db")
        ));
        // a file not made yet in an empty folder: the folder
        let got = g(&fresh.join("memory.json"), &[]).unwrap();
        assert_eq!(got.list[0].path, fresh.display().to_string());
        assert!(matches!(
            &got.list[0].why,
            GrantReason::FileFolder {
                database: false,
                ..
            }
        ));
        // a database among other files: itself, and the note offering its folder
        let got = g(&shared.join("notes.db"), &[]).unwrap();
        assert_eq!(got.list.len(), 1);
        assert_eq!(
            got.list[0].path,
            shared.join("notes.db").display().to_string()
        );
        assert_eq!(
            got.needs_folder,
            [FileNeedsFolder {
                key: "db".into(),
                label: "db".into(),
                file: shared.join("notes.db").display().to_string(),
                folder: shared.display().to_string(),
                database: true,
                exists: true,
            }]
        );
        // a file not made yet among other files: nothing it could use, and the note
        let got = g(&shared.join("new.json"), &[]).unwrap();
        assert!(got.list.is_empty());
        assert!(!got.needs_folder[0].exists && !got.needs_folder[0].database);
        // the user allows the folder: granted as theirs, nothing left to say
        let got = g(&shared.join("notes.db"), &[shared.display().to_string()]).unwrap();
        assert!(got.needs_folder.is_empty());
        assert_eq!(
            got.list,
            [GrantView {
                path: shared.display().to_string(),
                write: true,
                why: GrantReason::Written,
                means: None
            }]
        );
        // a file in home not made yet: home is never granted by itself
        let got = g(&home.join("new.db"), &[]).unwrap();
        assert!(got.list.is_empty() && got.needs_folder[0].folder == home.display().to_string());
        // nor written without being typed again
        let e = g(&home.join("new.db"), &["~".into()]).unwrap_err();
        assert_eq!(e.field, CONFIRM_FIELD);
        // a folder that does not exist
        assert_eq!(g(&home.join("nope/x.db"), &[]).unwrap_err().field, "db");
    }

    #[test]
    fn the_settings_a_well_known_tool_reads_are_proposed_and_may_be_declined() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap();
        std::fs::write(home.join(".gitconfig"), "[user]\n\tname = x\n").unwrap();
        std::fs::create_dir_all(home.join(".config/git")).unwrap();
        std::fs::write(home.join(".config/git/credentials"), "https://u:pw@h").unwrap();
        let h = Some(home.as_path());
        let paths = |g: Vec<GrantView>| -> Vec<String> {
            assert!(g
                .iter()
                .all(|g| !g.write && g.why == GrantReason::Proposed { tool: "git".into() }));
            g.into_iter().map(|g| g.path).collect()
        };
        let both = vec![
            home.join(".gitconfig").display().to_string(),
            home.join(".config/git").display().to_string(),
        ];
        for (package, command) in [
            (Some("mcp-server-git"), "uvx"),
            (Some("@modelcontextprotocol/server-git"), "npx"),
            (None, "/usr/bin/git"),
        ] {
            assert_eq!(paths(proposed(package, command, h, &[])), both);
        }
        // another server: nothing; one declined: the other
        assert!(proposed(Some("mcp-server-time"), "uvx", h, &[]).is_empty());
        assert_eq!(
            paths(proposed(
                Some("mcp-server-git"),
                "uvx",
                h,
                &["~/.config/git".into()]
            )),
            both[..1]
        );
        // what does not exist here is not proposed
        std::fs::remove_file(home.join(".gitconfig")).unwrap();
        assert_eq!(
            paths(proposed(Some("mcp-server-git"), "uvx", h, &[])),
            both[1..]
        );
    }
}
