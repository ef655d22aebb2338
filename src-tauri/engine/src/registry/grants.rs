//! The folders and files an install's sandbox grants, each with why: the user's own picks (a
//! path field's value, the form's extra folders) and what the app derives (a bundle's own
//! folder, read), all listed in the preview. A path field's default is a suggestion, never a
//! grant: the field starts empty. A write grant of `/`, home, or a place that holds what runs
//! when the user logs in ([`STARTUP_PLACES`]) needs the user to type that folder again.

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
    /// A folder or file the user listed for it to read.
    Picked,
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

/// Every grant of an install: the bundle's own folder (read), each path field's value (read and
/// write: the user gave the server that place), the folders the user listed (read). A write
/// grant of `/`, home or a start-up place ([`write_meaning`]) is refused unless `confirmed`
/// holds exactly that path (`~` expanded), and then its row says what it means.
pub fn grants(
    fields: &[Field],
    given: &BTreeMap<String, Given>,
    bundle_dir: Option<&Path>,
    picked: &[String],
    confirmed: &[String],
    home: Option<&Path>,
) -> Result<Vec<GrantView>, FormError> {
    let mut out: Vec<GrantView> = Vec::new();
    if let Some(d) = bundle_dir {
        out.push(GrantView {
            path: d.display().to_string(),
            write: false,
            why: GrantReason::BundleFolder,
            means: None,
        });
    }
    let confirmed: Vec<PathBuf> = confirmed
        .iter()
        .map(|c| c.trim())
        .filter(|c| !c.is_empty())
        .map(|c| expand_home(c, home))
        .collect();
    for f in fields {
        if !matches!(
            f.kind,
            FieldKind::File | FieldKind::Directory | FieldKind::Path
        ) {
            continue;
        }
        let Some(g) = given.get(&f.key) else { continue };
        for p in g.items().into_iter().filter(|p| !p.is_empty()) {
            if out.iter().any(|v| v.write && v.path == p) {
                continue;
            }
            let path = expand_home(&p, home);
            let means = write_meaning(&path, home);
            if let Some(m) = &means {
                if !confirmed.contains(&path) {
                    return Err(FormError {
                        field: CONFIRM_FIELD.into(),
                        message: format!(
                            "{}: letting it change {p} — {m}. To allow it, type {p} in “Confirm \
                             folders it may change”.",
                            f.label
                        ),
                    });
                }
            }
            out.push(GrantView {
                path: p,
                write: true,
                why: GrantReason::Field {
                    key: f.key.clone(),
                    label: f.label.clone(),
                },
                means,
            });
        }
    }
    for p in picked {
        if !out.iter().any(|v| v.path == *p) {
            out.push(GrantView {
                path: p.clone(),
                write: false,
                why: GrantReason::Picked,
                means: None,
            });
        }
    }
    Ok(out)
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
            grants(&fields, &given, None, &[], &c, h)
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
            &["/usr/share/dict".into()],
            &[],
            Some(&home),
        )
        .unwrap();
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
}
