//! Markdown → safe HTML. Raw HTML in the source is shown as text, never interpreted; the output
//! is then sanitized with ammonia as a second wall. The UI inserts only this function's output
//! as HTML.

use pulldown_cmark::{html, Event, Options, Parser};

pub fn render(markdown: &str) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TASKLISTS);
    let parser = Parser::new_ext(markdown, opts).map(|ev| match ev {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        Event::InlineMath(s) | Event::DisplayMath(s) => Event::Code(s),
        other => other,
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, parser);
    sanitize(&out)
}

fn sanitize(html: &str) -> String {
    ammonia::Builder::default()
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
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
}
