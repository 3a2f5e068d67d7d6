"""A page's HTML becomes the compact Markdown-like text the model reads: the article, not the menus."""

import random

import pytest

from margin.page.text import MAX_PAGE_CHARS, PageText, cap_text, html_to_text, page_text, site_of

NEWS_PAGE = """<!DOCTYPE html><html><head><title>Canyon walls</title><style>p{color:red}</style></head>
<body class="single has-sidebar">
<a class="skip-link" href="#main">Skip to content</a>
<header><div class="logo">Daily Rocks</div><nav><ul><li><a href="/">Home</a></li><li><a href="/geo">Geology</a></li></ul></nav></header>
<div id="cookie-banner">We use cookies to improve your experience. <button>Accept all</button></div>
<div class="layout">
  <main id="main">
    <article>
      <h1>How the canyon walls formed</h1>
      <p class="byline">By Ana Ruiz</p>
      <div class="share-buttons"><a>Share on Facebook</a> <a>Tweet this</a></div>
      <p>The river cut <em>down</em> through the rock for <strong>millions</strong> of years.</p>
      <h2>The layers</h2>
      <ul><li>Sandstone at the top</li><li>Limestone below</li></ul>
      <table><tr><th>Layer</th><th>Age</th></tr><tr><td>Kaibab</td><td>270 My</td></tr></table>
      <div class="header-image"><p>A caption under the header image</p></div>
      <script>trackReader()</script>
    </article>
  </main>
  <aside class="related"><h3>Related articles</h3><ul><li>Ten deserts to visit</li></ul></aside>
</div>
<div class="newsletter-signup">Subscribe to our newsletter</div>
<footer><p>Copyright Daily Rocks</p><ul class="social"><li>Instagram</li></ul></footer>
</body></html>"""

BOILERPLATE_WORDS = [
    "Skip to content",
    "Home",
    "Geology",
    "cookies",
    "Accept all",
    "Share on Facebook",
    "Tweet this",
    "Related articles",
    "Ten deserts",
    "Subscribe",
    "Copyright",
    "Instagram",
    "Daily Rocks",
    "trackReader",
    "color:red",
]


def test_the_fallback_path_keeps_the_article_and_none_of_the_menus():
    text = html_to_text(NEWS_PAGE, drop_boilerplate=True)
    assert text.split("\n\n") == [
        "# How the canyon walls formed",
        "By Ana Ruiz",
        "The river cut down through the rock for millions of years.",
        "## The layers",
        "- Sandstone at the top\n- Limestone below",
        "| Layer | Age |\n| --- | --- |\n| Kaibab | 270 My |",
        "A caption under the header image",
    ]
    for word in BOILERPLATE_WORDS:
        assert word not in text


def test_the_readability_path_keeps_everything_it_was_given():
    text = page_text(NEWS_PAGE, method="readability").text
    for word in [
        "Home",
        "Geology",
        "cookies",
        "Share on Facebook",
        "Related articles",
        "Subscribe",
        "Copyright",
        "The river cut down",
        "| Kaibab | 270 My |",
    ]:
        assert word in text
    # Still never text, on any path: scripts, styles, buttons, the document's <title>.
    for word in ["trackReader", "color:red", "Accept all", "Canyon walls"]:
        assert word not in text


def test_without_a_main_or_article_boilerplate_goes_and_the_rest_stays():
    html = """<div class="navbar">Menu Blog About</div><div id="content"><h2>Opening hours</h2>
    <p>Monday to Friday, 9 to 5.</p></div><div class="gdpr-consent">We value your privacy</div>
    <div id="footer">All rights reserved</div><div class="ad-slot">Buy now</div>"""
    assert html_to_text(html, drop_boilerplate=True) == "## Opening hours\n\nMonday to Friday, 9 to 5."


@pytest.mark.parametrize(
    "names",
    [
        'class="shadow"',
        'class="adaptive"',
        'class="download"',
        'class="leader"',
        'class="header-image"',
        'class="loaded"',
        'class="badge"',
        'class="shared-content"',
        'class="thread"',
        'class="multimodal"',
        'class="footnotes"',
        'id="address"',
        'class="has-sidebar"',
        'class="no-ads"',
        'class="menu-open"',
    ],
)
def test_class_names_that_only_look_like_boilerplate_are_kept(names):
    html = (
        f"<div {names}><p>Kept paragraph.</p></div><p>Other text that makes the page longer than the div.</p>"
    )
    assert "Kept paragraph." in html_to_text(html, drop_boilerplate=True)


@pytest.mark.parametrize(
    "names",
    [
        'class="header-ad"',
        'id="cookie-banner"',
        'class="cookieBanner"',
        'class="ad"',
        'class="ads-wrapper"',
        'class="sidebar-left"',
        'class="site-footer"',
        'class="sign-up-form"',
        'class="breadcrumbs"',
        'class="post popup"',
        'id="comments"',
        'class="sponsored_links"',
        'role="navigation"',
        'role="complementary"',
    ],
)
def test_boilerplate_class_names_ids_and_roles_are_dropped(names):
    html = f"<div {names}><p>Dropped words.</p></div><p>The article text, which is the longer part of this page.</p>"
    text = html_to_text(html, drop_boilerplate=True)
    assert "Dropped words." not in text and "The article text" in text


def test_a_wrapper_that_holds_the_article_is_not_dropped_for_its_class():
    html = """<div class="page-with-sidebar modal-wrapper"><h1>Title</h1><p>The whole article.</p>
    <div class="sidebar">Popular posts</div></div>"""
    assert html_to_text(html, drop_boilerplate=True) == "# Title\n\nThe whole article."


def test_code_class_names_are_never_boilerplate():
    html = '<pre><code class="language-python"><span class="hljs-comment"># share the menu</span>\nx = 1</code></pre>'
    assert html_to_text(html, drop_boilerplate=True) == "```python\n# share the menu\nx = 1\n```"


def test_page_level_header_and_footer_go_but_an_articles_own_header_stays():
    html = """<header>Site name</header><article><header><h1>Post title</h1><p>March 3</p></header>
    <p>Body text of the post, long enough to be the article.</p><footer>Filed under rocks</footer></article>
    <footer>Site footer</footer>"""
    text = html_to_text(html, drop_boilerplate=True)
    assert (
        text
        == "# Post title\n\nMarch 3\n\nBody text of the post, long enough to be the article.\n\nFiled under rocks"
    )


def test_the_largest_article_is_kept_but_a_list_of_similar_articles_stays_whole():
    one_big = (
        "<article><p>Small teaser.</p></article>"
        "<article><p>" + "The main story goes on. " * 20 + "</p></article>"
    )
    assert html_to_text(one_big, drop_boilerplate=True).startswith("The main story")
    feed = "".join(f"<article><p>Post number {i} with some words in it.</p></article>" for i in range(4))
    assert html_to_text(feed, drop_boilerplate=True).count("Post number") == 4


def test_headings_paragraphs_breaks_and_the_title_heading():
    html = "<h1>My Page</h1><p>One\n   two&nbsp;&nbsp;three</p><p>Line<br>break<br><br>gap</p><h3>Sub</h3><h6>Deep</h6>"
    assert html_to_text(html) == "# My Page\n\nOne two three\n\nLine\nbreak\n\ngap\n\n### Sub\n\n###### Deep"
    assert html_to_text(html, title="  my   PAGE ").startswith("One two three")
    # The title heading goes when it is the first one or at the top; later, under text, it stays.
    assert "# My Page" in html_to_text("<h2>Intro</h2><p>Text.</p><h1>My Page</h1>", title="My Page")
    # A tab's title adds the site's name; the heading that says the rest is still the title.
    for title in ("My Page | Daily Rocks", "Daily Rocks - My Page", "My Page \u2014 Daily Rocks"):
        assert html_to_text(html, title=title).startswith("One two three")
    assert html_to_text(html, title="My Page is long | Daily Rocks").startswith("# My Page")


def test_nested_lists_are_indented_and_numbered_from_their_start():
    html = """<ol start="3"><li>Three<ol><li>Three a</li><li>Three b<ul><li>deep</li></ul></li></ol></li>
    <li><p>Four, first paragraph</p><p>Four, second paragraph</p></li></ol>
    <ol reversed><li>two</li><li>one</li></ol><p>After</p>"""
    assert html_to_text(html) == (
        "3. Three\n  1. Three a\n  2. Three b\n    - deep\n"
        "4. Four, first paragraph\n  Four, second paragraph\n\n"
        "2. two\n1. one\n\nAfter"
    )


def test_tables_have_a_header_escaped_pipes_colspan_and_padded_rows():
    html = """<table><caption>Results</caption><thead><tr><th>Name</th><th>Score | max</th><th>Note</th></tr></thead>
    <tbody><tr><td colspan="2">Both columns</td><td>x</td></tr><tr><td>Short row</td></tr>
    <tr><td></td><td></td></tr><tr><td>Multi<br>line</td><td>a</td><td>b</td></tr></tbody></table>"""
    assert html_to_text(html) == (
        "Results\n\n"
        "| Name | Score \\| max | Note |\n| --- | --- | --- |\n| Both columns |  | x |\n"
        "| Short row |  |  |\n| Multi line | a | b |"
    )


def test_a_layout_table_gives_its_content():
    assert (
        html_to_text("<table><tr><td><h2>Hello</h2><p>Just text.</p></td></tr></table>")
        == "## Hello\n\nJust text."
    )
    layout = "<table><tr><td><p>Menu</p></td><td><h1>Story</h1><p>Words.</p></td></tr></table>"
    assert html_to_text(layout) == "Menu\n\n# Story\n\nWords."


def test_code_blocks_quotes_rules_figures_and_links():
    html = """<p>Run <code>pip install x</code> then <a href="https://example.com/very/long">read the docs</a>.</p>
    <pre class="lang-js">
function f() {
    return `a`;   
}


f();</pre>
    <blockquote><p>Quoted one</p><p>Quoted two</p></blockquote><hr>
    <figure><img src="c.png" alt="A bar chart"><figcaption>Sales by month</figcaption></figure>
    <p>An icon <img src="i.png" alt="icon"> inline.</p>"""
    assert html_to_text(html) == (
        "Run `pip install x` then read the docs.\n\n"
        "```js\nfunction f() {\n    return `a`;\n}\n\n\nf();\n```\n\n"
        "> Quoted one\n>\n> Quoted two\n\n---\n\n[Image: A bar chart]\n\nSales by month\n\n"
        "An icon inline."
    )
    assert "https://" not in html_to_text(html)


def test_a_code_block_holding_a_fence_gets_a_longer_fence():
    assert html_to_text("<pre>```\nx\n```</pre>") == "````\n```\nx\n```\n````"


def test_entities_are_decoded():
    html = "<p>Fish &amp; chips &lt;b&gt; &#8364;5 &eacute;t&eacute; &#x1F600; &copy</p>"
    assert html_to_text(html) == "Fish & chips <b> €5 été 😀 ©"


def test_hidden_elements_and_never_text_elements_are_dropped():
    html = """<p>Visible</p><div hidden>hidden attr</div><div aria-hidden="true">aria hidden</div>
    <p style="color: red; display : none">inline none</p><span style="visibility:hidden">invisible</span>
    <noscript>Enable JS</noscript><template><p>tpl</p></template><svg><text>svg text</text></svg>
    <iframe src="x">frame</iframe><form><label>Your name</label><input value="typed"><select><option>opt</option></select>
    <textarea>draft</textarea><button>Send</button></form><dialog open>A dialog</dialog>
    <div hidden="until-found">Found by search</div>"""
    assert html_to_text(html) == "Visible\n\nYour name\n\nFound by search"


def test_broken_html_is_repaired_the_html_way():
    html = "<p>One<p>Two<div>Block</div><ul><li>a<li>b</ul></span></div></p><table><tr><td>x<td>y<tr><td>z</table><h2>End"
    assert (
        html_to_text(html)
        == "One\n\nTwo\n\nBlock\n\n- a\n- b\n\n| x | y |\n| --- | --- |\n| z |  |\n\n## End"
    )


def test_no_line_ends_in_spaces_and_blank_lines_never_pile_up():
    html = (
        "<div>  a  </div>\n\n<p> </p><p>   </p><br><br><br><br><div><div><p>b </p></div></div>\n<li> c </li>"
    )
    text = html_to_text(html)
    assert text == "a\n\nb\n\n- c"
    assert all(line == line.rstrip() for line in text.split("\n"))


def test_ten_thousand_nested_elements_do_not_crash():
    for html in (
        "<div>" * 10_000 + "deep" + "</div>" * 10_000,
        "<blockquote>" * 10_000 + "quote",
        "<ul><li>" * 10_000 + "item",
        "<table><tr><td>" * 3_000 + "cell",
        "<span>" * 10_000 + "</div>" * 10_000,
    ):
        text = html_to_text(html, drop_boilerplate=True)
        assert len(text) < 100
    assert html_to_text("<blockquote>" * 10_000 + "quote").endswith("quote")


@pytest.mark.parametrize(
    "html",
    [
        "",
        "<",
        "<<<>>>",
        "<a",
        "<a href='x",
        "<!--",
        "<!-- never closed <p>text",
        "<![foo[",
        "<![CDATA[x]]>",
        "</",
        "</>",
        "<?php echo 1 ?>",
        "<!DOCTYPE",
        "&",
        "&#xFFFFFFFF;",
        "&#0;",
        "<p>\x00\ud800</p>",
        "<table><td colspan=99999999>x",
        "<ol start=abc><li>x",
        "<script>never closed",
        "<p style>x</p>",
        '<div class="">x</div><div id>y</div>',
        "<td>orphan cell</td><li>orphan item",
        "</table></li></td></tr>",
    ],
)
def test_garbage_never_raises(html):
    for drop in (False, True):
        assert isinstance(html_to_text(html, drop_boilerplate=drop, title="x"), str)


def test_random_markup_never_raises():
    rnd = random.Random(7)
    alphabet = "<>/!-[]&;#\"'= abcdivpltrhuo1\n"
    for _ in range(300):
        html = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 300)))
        html_to_text(html)
        html_to_text(html, drop_boilerplate=True, title="a")


def test_an_unterminated_tag_swallows_the_rest_as_in_browsers():
    # html.parser would take quadratic time here; the text after an unclosed `<a` is inside the tag.
    assert html_to_text('<p>Before</p><a href="' + "x <p>y</p> " * 1000) == "Before"
    assert html_to_text("<p>Kept</p>" + "<a" * 100_000) == "Kept"


def test_cap_text_cuts_at_a_paragraph_break_near_the_limit():
    assert cap_text("short") == PageText("short", False, 5)
    exact = "x" * 100
    assert cap_text(exact, limit=100) == PageText(exact, False, 100)
    text = "a" * 95 + "\n\n" + "b" * 20
    assert cap_text(text, limit=100) == PageText("a" * 95, True, 117)
    words = "word " * 40  # no paragraph break: cut at whitespace
    capped = cap_text(words, limit=100)
    assert capped.truncated and capped.text == ("word " * 20).rstrip() and capped.original_chars == 200
    # A break far before the limit (outside its last tenth) is not used: the cut is hard.
    far = "a" * 10 + "\n\n" + "b" * 200
    assert cap_text(far, limit=100).text == "a" * 10 + "\n\n" + "b" * 88
    assert MAX_PAGE_CHARS == 2_000_000


def test_page_text_cleans_the_fallback_only_and_caps():
    html = "<nav>Menu</nav><p>" + "Long text. " * 50 + "</p>"
    assert "Menu" in page_text(html, method="readability").text
    assert "Menu" not in page_text(html, method="fallback").text
    capped = page_text(html, method="fallback", limit=100)
    assert capped.truncated and len(capped.text) <= 100 and capped.original_chars > 500


@pytest.mark.parametrize(
    "url, site",
    [
        ("https://www.example.com/a?b=c", "example.com"),
        ("http://EXAMPLE.org:8080/x", "example.org"),
        ("https://docs.python.org/3/", "docs.python.org"),
        ("file:///home/me/notes.html", "file"),
        ("https://www.example.com./", "example.com"),
        ("not a url", ""),
        ("", ""),
        ("http://[::1", ""),
        ("https://user:pw@www.host.net/", "host.net"),
    ],
)
def test_site_of(url, site):
    assert site_of(url) == site


# An Ars Technica article as Readability hands it over (the same markup on the fallback path): the
# section's label, a link with a dash after it, sits in an h4 above the headline.
ARS_ARTICLE = """<div id="readability-page-1" class="page"><article class="article-single">
<header class="article-header">
  <h4 class="post-upperdek"><a href="https://arstechnica.com/information-technology/">Biz &amp; IT</a> \u2014</h4>
  <h1 itemprop="headline">Hackers exploit a zero-day in widely used file-transfer software</h1>
  <h2 itemprop="description">Thousands of servers are exposed; patches are out for two of three versions.</h2>
  <section class="post-meta"><p class="byline">Dan Goodin - <time>Jun 2, 2023 10:52 pm UTC</time></p></section>
</header>
<div itemprop="articleBody" class="article-content post-page">
  <p>Hackers are exploiting a critical vulnerability in a file-transfer application.</p>
  <h3>Patch now</h3>
  <p>The maker urged customers to disable HTTP traffic until they patch.</p>
</div></article></div>"""
ARS_TITLE = "Hackers exploit a zero-day in widely used file-transfer software | Ars Technica"


@pytest.mark.parametrize("method", ["readability", "fallback"])
def test_a_section_kicker_above_the_title_is_boilerplate(method):
    text = page_text(ARS_ARTICLE, method=method, title=ARS_TITLE).text
    assert "Biz" not in text and "\u2014" not in text.split("\n")[0]
    assert "Hackers exploit" not in text  # the title heading: the record's header names the page
    assert text.startswith("## Thousands of servers are exposed")
    assert "### Patch now" in text and text.endswith("until they patch.")


def test_a_kicker_goes_even_when_no_title_heading_follows():
    # Readability sometimes keeps the label and drops the headline.
    html = "<h4><a href='/science/'>Science</a> \u2014</h4><p>Astronomers found a comet.</p><h2>Next -</h2>"
    assert html_to_text(html, title="Comet found") == "Astronomers found a comet.\n\n## Next -"
    # Short labels above the title go with it, whatever they end with.
    html = "<h5>Science</h5><h4>Space</h4><h1>Comet found</h1><p>Text.</p>"
    assert html_to_text(html, title="Comet found | Example News") == "Text."
    # A long heading above the title is a heading of the page: kept.
    long = "<h2>A very long heading that is no section label at all</h2><h1>Comet found</h1><p>Text.</p>"
    assert (
        html_to_text(long, title="Comet found")
        == "## A very long heading that is no section label at all\n\nText."
    )
    # Only at the top: a heading ending with a dash under text is the page's own.
    assert (
        html_to_text("<p>Intro.</p><h3>Q &amp; A \u2014</h3><p>More.</p>")
        == "Intro.\n\n### Q & A \u2014\n\nMore."
    )
