//! Markdown → safe HTML. Raw HTML in the source is shown as text, never interpreted; the output
//! is then sanitized with ammonia as a second wall. The UI inserts only this function's output
//! as HTML.
//!
//! Images: only those the text carries itself (`data:image/…`, not SVG) are shown. An image from
//! anywhere else would be fetched the moment the text is shown, telling that place the user is
//! reading (a model or a tool result can put anything in a URL's query); it becomes a link to
//! the image instead, which the window opens only after showing the user where it goes.

use std::borrow::Cow;

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};

pub fn render(markdown: &str) -> String {
    sanitize(&unsanitized(markdown))
}

/// An image the text carries itself, in a raster format a browser shows without running anything.
fn is_inline_image(url: &str) -> bool {
    let u: String = url
        .chars()
        .filter(|c| !c.is_whitespace())
        .take(32)
        .collect::<String>()
        .to_ascii_lowercase();
    ["png", "jpeg", "jpg", "gif", "webp", "avif", "bmp"]
        .iter()
        .any(|t| {
            u.strip_prefix("data:image/")
                .and_then(|r| r.strip_prefix(t))
                .is_some_and(|r| r.starts_with([';', ',']))
        })
}

/// The Markdown as HTML before sanitizing (raw HTML already turned into text, images from
/// elsewhere turned into links).
fn unsanitized(markdown: &str) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TASKLISTS);
    let events: Vec<Event> = Parser::new_ext(markdown, opts)
        .map(|ev| match ev {
            Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
            Event::InlineMath(s) | Event::DisplayMath(s) => Event::Code(s),
            other => other,
        })
        .collect();
    let mut out_events: Vec<Event> = Vec::with_capacity(events.len());
    // for each image open: whether it became a link
    let mut images: Vec<bool> = Vec::new();
    for (i, ev) in events.iter().enumerate() {
        match ev {
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) if !is_inline_image(dest_url) => {
                images.push(true);
                out_events.push(Event::Start(Tag::Link {
                    link_type: *link_type,
                    dest_url: dest_url.clone(),
                    title: title.clone(),
                    id: id.clone(),
                }));
                // an image with no words: the link says where it goes
                if matches!(events.get(i + 1), Some(Event::End(TagEnd::Image))) {
                    let words = if dest_url.is_empty() {
                        "image"
                    } else {
                        dest_url.as_ref()
                    };
                    out_events.push(Event::Text(CowStr::from(words.to_string())));
                }
            }
            Event::Start(Tag::Image { .. }) => {
                images.push(false);
                out_events.push(ev.clone());
            }
            Event::End(TagEnd::Image) => {
                if images.pop().unwrap_or(false) {
                    out_events.push(Event::End(TagEnd::Link));
                } else {
                    out_events.push(ev.clone());
                }
            }
            _ => out_events.push(ev.clone()),
        }
    }
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, out_events.into_iter());
    out
}

fn sanitize(html: &str) -> String {
    ammonia::Builder::default()
        .url_schemes(["http", "https", "mailto", "data"].into_iter().collect())
        // data: only as an inline raster image; an image only as one
        .attribute_filter(|element, attribute, value| match (element, attribute) {
            ("img", "src") => is_inline_image(value).then_some(Cow::Borrowed(value)),
            (_, "src" | "href")
                if value
                    .trim_start()
                    .get(..5)
                    .is_some_and(|s| s.eq_ignore_ascii_case("data:")) =>
            {
                None
            }
            _ => Some(Cow::Borrowed(value)),
        })
        .link_rel(Some("noopener noreferrer"))
        .add_tag_attributes("code", ["class"])
        .add_tag_attributes("input", ["type", "checked", "disabled"])
        .add_tags(["input"])
        .clean(html)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders() {
        let h = render(
            "# T\n\n**b** `c`\n\n```rust\nfn x() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(h.contains("<h1>T</h1>"), "{h}");
        assert!(h.contains("<strong>b</strong>"));
        assert!(h.contains("<code class=\"language-rust\">"), "{h}");
        assert!(h.contains("<table>"));
    }

    #[test]
    fn raw_html_is_text_and_nothing_active_survives() {
        let h = render("hi <img src=x onerror=alert(1)> <script>alert(2)</script>\n\n<div onclick=\"x()\">d</div>\n\n[l](javascript:alert(3)) <a href=\"javascript:alert(4)\">a</a>");
        assert!(!h.contains("<img"), "{h}");
        assert!(!h.contains("<script"), "{h}");
        assert!(!h.contains("<div"), "{h}");
        assert!(!h.contains("<a href=\"javascript"), "{h}");
        assert!(h.contains("<a rel=\"noopener noreferrer\">l</a>"), "{h}");
        assert!(h.contains("&lt;img src=x onerror=alert(1)&gt;"), "{h}");
        assert!(h.contains("&lt;script&gt;"), "{h}");
    }

    /// The payloads the E2E test feeds the window through every channel (§ = the payload's
    /// number, ⏎ = a line break).
    fn corpus() -> Vec<String> {
        include_str!("../../../tests/e2e/xss_payloads.txt")
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with("%%"))
            .enumerate()
            .map(|(i, l)| l.replace('§', &(i + 1).to_string()).replace('⏎', "\n"))
            .collect()
    }

    /// The text a browser shows of well-formed HTML (tags dropped, quotes in tags respected,
    /// the entities the two serializers write decoded).
    fn text_of(html: &str) -> String {
        let mut out = String::new();
        let mut quote: Option<char> = None;
        let mut in_tag = false;
        for c in html.chars() {
            match (in_tag, quote, c) {
                (false, _, '<') => in_tag = true,
                (false, _, c) => out.push(c),
                (true, None, '"' | '\'') => quote = Some(c),
                (true, Some(q), c) if c == q => quote = None,
                (true, None, '>') => in_tag = false,
                _ => {}
            }
        }
        decode_numeric(&out)
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&nbsp;", "\u{a0}")
            .replace("&amp;", "&")
    }

    /// `&#NN;` and `&#xHH;` as the characters they stand for.
    fn decode_numeric(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("&#") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            let end = after.find(';').unwrap_or(0);
            let code = match after[..end].strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok(),
                None => after[..end].parse().ok(),
            };
            match code.and_then(char::from_u32).filter(|_| end > 0) {
                Some(c) => {
                    out.push(c);
                    rest = &after[end + 1..];
                }
                None => {
                    out.push_str("&#");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// Each tag of the HTML: its name and its attributes (name, value).
    fn tags(html: &str) -> Vec<(String, Vec<(String, String)>)> {
        let mut out = Vec::new();
        let mut rest = html;
        while let Some(start) = rest.find('<') {
            let after = &rest[start + 1..];
            // the tag ends at the first '>' outside quotes
            let (mut quote, mut end) = (None, after.len());
            for (i, c) in after.char_indices() {
                match (quote, c) {
                    (None, '"' | '\'') => quote = Some(c),
                    (Some(q), c) if c == q => quote = None,
                    (None, '>') => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            let tag = &after[..end];
            rest = &after[(end + 1).min(after.len())..];
            if tag.starts_with('/') {
                continue;
            }
            let name: String = tag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            let mut attrs = Vec::new();
            let mut a = tag[name.len()..].trim_start();
            while !a.is_empty() {
                let key: String = a
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '=' && *c != '/')
                    .collect();
                a = &a[key.len()..];
                let value = if let Some(v) = a.strip_prefix("=\"") {
                    let close = v.find('"').unwrap_or(v.len());
                    a = &v[(close + 1).min(v.len())..];
                    v[..close].to_string()
                } else {
                    a = a.get(1..).unwrap_or("");
                    String::new()
                };
                if !key.is_empty() {
                    attrs.push((key.to_ascii_lowercase(), value));
                }
                a = a.trim_start();
            }
            out.push((name.to_ascii_lowercase(), attrs));
        }
        out
    }

    /// What the window may receive: the elements Markdown makes, no handler, no style, and
    /// links only to http(s), mailto or a relative place, images only inline (`data:image/…`).
    /// The first thing wrong, if any.
    fn not_inert(html: &str) -> Option<String> {
        const ELEMENTS: &[&str] = &[
            "p",
            "a",
            "img",
            "code",
            "pre",
            "em",
            "strong",
            "del",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "blockquote",
            "ul",
            "ol",
            "li",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "input",
            "br",
            "hr",
        ];
        for (name, attrs) in tags(html) {
            if !ELEMENTS.contains(&name.as_str()) {
                return Some(format!("<{name}>"));
            }
            for (key, value) in attrs {
                if key.starts_with("on") || key == "style" || key == "srcdoc" {
                    return Some(format!("{key} on <{name}>"));
                }
                if matches!(
                    key.as_str(),
                    "href" | "src" | "action" | "formaction" | "xlink:href"
                ) {
                    let v: String = text_of(&value)
                        .chars()
                        .filter(|c| !c.is_whitespace() && !c.is_control())
                        .collect::<String>()
                        .to_ascii_lowercase();
                    let scheme = v
                        .split_once(':')
                        .map(|(s, _)| s)
                        .filter(|s| !s.contains(['/', '?', '#']));
                    // an image only from the text itself (nothing fetched from elsewhere)
                    if name == "img" && key == "src" {
                        if !is_inline_image(&v) {
                            return Some(format!("<img src={value:?}>"));
                        }
                    } else if !matches!(scheme, None | Some("http" | "https" | "mailto")) {
                        return Some(format!("{key}={value:?}"));
                    }
                }
            }
        }
        None
    }

    #[test]
    fn the_xss_corpus_renders_inert_and_keeps_its_text() {
        let corpus = corpus();
        assert!(corpus.len() >= 100, "{}", corpus.len());
        // the check itself catches what Markdown makes before it is sanitized
        for unsafe_html in [
            unsanitized("[x](javascript:alert(1))"),
            unsanitized("![x](JaVaScRiPt:alert(1))"),
            "<p><a href=\" java&#x09;script:x\">a</a></p>".into(),
            "<p><img src=\"x\" onerror=\"x()\"></p>".into(),
            "<svg></svg>".into(),
        ] {
            assert!(not_inert(&unsafe_html).is_some(), "{unsafe_html}");
        }
        for p in &corpus {
            let html = render(p);
            assert_eq!(not_inert(&html), None, "{p}: {html}");
            // sanitizing takes away elements and attributes, never text the reader should see
            assert_eq!(text_of(&html), text_of(&unsanitized(p)), "{p}");
        }
        // and all of it in one reply, as the E2E test sends it
        let all: String = corpus
            .iter()
            .enumerate()
            .map(|(i, p)| format!("⟦{}⟧\n\n{p}\n\n", i + 1))
            .collect();
        let html = render(&all);
        assert_eq!(not_inert(&html), None, "the whole corpus: {html}");
        assert_eq!(text_of(&html), text_of(&unsanitized(&all)));
    }

    #[test]
    fn only_images_the_text_carries_are_shown_the_rest_become_links() {
        const PNG: &str = "data:image/png;base64,iVBORw0KGgo=";
        let h = render(&format!("![a dot]({PNG})"));
        assert!(
            h.contains(&format!("<img src=\"{PNG}\" alt=\"a dot\"")),
            "{h}"
        );
        // an image from elsewhere would be fetched as soon as it is shown: a link instead
        let h = render("![the chart](https://tracker.example/p.png?c=secret)");
        assert!(!h.contains("<img"), "{h}");
        assert!(
            h.contains("<a href=\"https://tracker.example/p.png?c=secret\" rel=\"noopener noreferrer\">the chart</a>"),
            "{h}"
        );
        // with no words, the link says where it goes
        let h = render("![](http://x.example/a.gif)");
        assert!(h.contains(">http://x.example/a.gif</a>"), "{h}");
        assert_eq!(not_inert(&h), None);
        // SVG can carry script; data: elsewhere than an image is never kept
        for md in [
            "![s](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=)",
            "[click](data:text/html,<script>x()</script>)",
            "![x](data:text/html;base64,PHNjcmlwdD4=)",
        ] {
            let h = render(md);
            assert!(!h.contains("data:"), "{md}: {h}");
            assert!(!h.contains("<img"), "{md}: {h}");
        }
        // the second wall alone: raw HTML that reached the sanitizer keeps no outside image
        let h = sanitize(
            "<p><img src=\"https://t.example/x.png\"><a href=\"data:text/html,x\">a</a></p>",
        );
        assert!(!h.contains("t.example") && !h.contains("data:"), "{h}");
        // nested images close what they opened
        let h = render("![outer ![inner](http://a.example/i.png)](http://b.example/o.png)");
        assert_eq!(not_inert(&h), None, "{h}");
        assert_eq!(h.matches("<a ").count(), h.matches("</a>").count(), "{h}");
    }

    #[test]
    fn an_inline_image_is_recognised_by_its_type_only() {
        assert!(is_inline_image("data:image/png;base64,AAAA"));
        assert!(is_inline_image(" DATA:IMAGE/JPEG;base64,AAAA"));
        assert!(is_inline_image("data:image/webp,xyz"));
        assert!(!is_inline_image("data:image/svg+xml,<svg/>"));
        assert!(!is_inline_image("data:image/pngx;base64,AAAA"));
        assert!(!is_inline_image("https://x/data:image/png;"));
        assert!(!is_inline_image("x.png"));
    }
}
