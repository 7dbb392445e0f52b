/* test_xml: the s3 XML writer (escaping, well-formedness of anything it writes) and the
 * bounded expat DOM parser (valid bodies, malformed input, depth/node/text limits, and
 * refusal of DOCTYPE and entities). */
#include "s3/xml.h"
#include "test.h"

static const char *parse_name(const char *s, cn_err *err)
{
	static char name[64];
	cn_xml_node *root = NULL;
	*err = cn_xml_parse(s, strlen(s), &root);
	if (*err)
		return NULL;
	snprintf(name, sizeof name, "%s", root->name);
	cn_xml_free(root);
	return name;
}

TEST(writer_escapes)
{
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_xml_elem(&b, "Key", "a&b<c>d\"e'f"), CN_OK);
	CHECK_EQ_STR(b.p, "<Key>a&amp;b&lt;c&gt;d&quot;e&apos;f</Key>");
	b.len = 0;
	CHECK_EQ_INT(cn_xml_elem_n(&b, "K", "\t\n\r\x01\x7f", 5), CN_OK);
	CHECK_EQ_STR(b.p, "<K>&#9;&#10;&#13;\xEF\xBF\xBD\x7f</K>");
	b.len = 0;
	/* valid UTF-8 passes; invalid bytes, surrogates and U+FFFE become U+FFFD */
	CHECK_EQ_INT(cn_xml_escape(&b, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 9), CN_OK);
	CHECK_EQ_STR(b.p, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
	b.len = 0;
	CHECK_EQ_INT(cn_xml_escape(&b, "\xff\xC3\xED\xA0\x80\xEF\xBF\xBEz", 9), CN_OK);
	CHECK_EQ_STR(b.p, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
	                  "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz"); /* 8 x U+FFFD, one per bad byte */
	b.len = 0;
	/* embedded NUL is written as U+FFFD, not truncating */
	CHECK_EQ_INT(cn_xml_escape(&b, "a\0b", 3), CN_OK);
	CHECK_EQ_INT(b.len, 5);
	cn_buf_fini(&b);
}

TEST(writer_document)
{
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_xml_decl(&b), CN_OK);
	CHECK_EQ_INT(cn_xml_open(&b, "ListAllMyBucketsResult", CN_S3_XMLNS), CN_OK);
	CHECK_EQ_INT(cn_xml_elemf(&b, "Size", "%d-%s", 42, "x<y"), CN_OK);
	CHECK_EQ_INT(cn_xml_elem(&b, "Empty", ""), CN_OK);
	CHECK_EQ_INT(cn_xml_close(&b, "ListAllMyBucketsResult"), CN_OK);
	CHECK_EQ_STR(b.p, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	                  "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	                  "<Size>42-x&lt;y</Size><Empty></Empty></ListAllMyBucketsResult>");
	cn_buf_fini(&b);
}

TEST(writer_roundtrip_all_bytes)
{
	/* Whatever bytes go in, the writer's output parses, and ASCII text survives. */
	char in[256];
	for (int i = 0; i < 256; i++)
		in[i] = (char)i;
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(cn_xml_elem_n(&b, "Key", in, sizeof in), CN_OK);
	cn_xml_node *root = NULL;
	CHECK_EQ_INT(cn_xml_parse(b.p, b.len, &root), CN_OK);
	if (root) {
		CHECK_EQ_STR(root->name, "Key");
		CHECK(root->text_len > 0x80 - 0x20);
		CHECK(memmem(root->text, root->text_len, in + 0x20, 0x80 - 0x20) != NULL);
		CHECK(memchr(root->text, '\t', root->text_len) != NULL);
		CHECK(memchr(root->text, '\r', root->text_len) != NULL);
	}
	cn_xml_free(root);
	cn_buf_fini(&b);
}

TEST(parse_delete)
{
	const char *s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	                "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	                "<Quiet>true</Quiet>"
	                "<Object><Key>a&amp;b</Key></Object>"
	                "<Object><Key><![CDATA[x<y]]></Key><VersionId>null</VersionId></Object>"
	                "<!-- comment --><?pi ignored?>"
	                "</Delete>";
	cn_xml_node *root = NULL;
	CHECK_EQ_INT(cn_xml_parse(s, strlen(s), &root), CN_OK);
	if (!root)
		return;
	CHECK_EQ_STR(root->name, "Delete");
	const cn_xml_node *q = cn_xml_child(root, "Quiet");
	CHECK(q && !strcmp(q->text, "true"));
	int nobj = 0;
	for (const cn_xml_node *o = root->child; o; o = o->next) {
		if (strcmp(o->name, "Object"))
			continue;
		const cn_xml_node *k = cn_xml_child(o, "Key");
		CHECK(k != NULL);
		if (k && nobj == 0)
			CHECK_EQ_STR(k->text, "a&b");
		if (k && nobj == 1) {
			CHECK_EQ_STR(k->text, "x<y");
			CHECK_EQ_STR(cn_xml_child(o, "VersionId")->text, "null");
		}
		nobj++;
	}
	CHECK_EQ_INT(nobj, 2);
	CHECK(cn_xml_child(root, "Missing") == NULL);
	CHECK(cn_xml_child(NULL, "Quiet") == NULL);
	cn_xml_free(root);
}

TEST(parse_prefixes_and_text)
{
	cn_err e;
	CHECK_EQ_STR(parse_name("<s3:Tagging xmlns:s3=\"urn:x\"><s3:TagSet/></s3:Tagging>", &e),
	             "Tagging");
	const char *s = "<A> one <B>x</B> two &#65;&#x42;</A>";
	cn_xml_node *root = NULL;
	CHECK_EQ_INT(cn_xml_parse(s, strlen(s), &root), CN_OK);
	if (root) {
		CHECK_EQ_STR(root->text, " one  two AB");
		CHECK_EQ_INT(root->text_len, 12);
		CHECK_EQ_STR(root->child->text, "x");
		CHECK(root->child->child == NULL && root->child->next == NULL);
	}
	cn_xml_free(root);
	/* empty element: text is "" never NULL */
	root = NULL;
	CHECK_EQ_INT(cn_xml_parse("<E/>", 4, &root), CN_OK);
	if (root)
		CHECK(root->text && root->text[0] == 0 && root->text_len == 0);
	cn_xml_free(root);
}

TEST(parse_malformed)
{
	static const char *bad[] = {
		"", " ", "<", "<A>", "<A></B>", "<A><B></A></B>", "text", "<A/><B/>",
		"<A>&unknown;</A>", "<A x='1' x='2'/>", "<A>\x01</A>", "<A>\xff</A>", "</A>",
		"<?xml version=\"1.0\"?>", "<A><!-- -- --></A>",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cn_xml_node *root = (cn_xml_node *)1;
		cn_err e = cn_xml_parse(bad[i], strlen(bad[i]), &root);
		if (e != CN_ERR_INVALID)
			fprintf(stderr, "input %zu: %d\n", i, e);
		CHECK_EQ_INT(e, CN_ERR_INVALID);
		CHECK(root == NULL);
	}
	/* an embedded NUL ends nothing early: it is invalid XML */
	cn_xml_node *root = NULL;
	CHECK_EQ_INT(cn_xml_parse("<A>\0</A>", 8, &root), CN_ERR_INVALID);
}

TEST(parse_refuses_doctype_and_entities)
{
	cn_err e;
	CHECK(parse_name("<!DOCTYPE A><A/>", &e) == NULL);
	CHECK_EQ_INT(e, CN_ERR_INVALID);
	const char *laughs =
		"<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
		"<!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
		"<!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">]>"
		"<lolz>&lol2;</lolz>";
	CHECK(parse_name(laughs, &e) == NULL);
	CHECK_EQ_INT(e, CN_ERR_INVALID);
	const char *xxe = "<!DOCTYPE A [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><A>&x;</A>";
	CHECK(parse_name(xxe, &e) == NULL);
	CHECK_EQ_INT(e, CN_ERR_INVALID);
	const char *pe = "<!DOCTYPE A SYSTEM \"http://example.com/a.dtd\"><A/>";
	CHECK(parse_name(pe, &e) == NULL);
	CHECK_EQ_INT(e, CN_ERR_INVALID);
}

TEST(parse_limits)
{
	cn_buf b;
	cn_buf_init(&b);
	cn_xml_node *root = NULL;
	/* depth 32 is fine, 33 is not */
	for (int i = 0; i < 32; i++)
		cn_buf_puts(&b, "<a>");
	for (int i = 0; i < 32; i++)
		cn_buf_puts(&b, "</a>");
	CHECK_EQ_INT(cn_xml_parse(b.p, b.len, &root), CN_OK);
	cn_xml_free(root);
	b.len = 0;
	for (int i = 0; i < 33; i++)
		cn_buf_puts(&b, "<a>");
	for (int i = 0; i < 33; i++)
		cn_buf_puts(&b, "</a>");
	CHECK_EQ_INT(cn_xml_parse(b.p, b.len, &root), CN_ERR_TOO_LARGE);
	CHECK(root == NULL);
	/* 20,000 nodes fine, 20,001 not */
	b.len = 0;
	cn_buf_puts(&b, "<r>");
	for (int i = 0; i < 19999; i++)
		cn_buf_puts(&b, "<o/>");
	cn_buf_puts(&b, "</r>");
	CHECK_EQ_INT(cn_xml_parse(b.p, b.len, &root), CN_OK);
	cn_xml_free(root);
	b.len = 0;
	cn_buf_puts(&b, "<r>");
	for (int i = 0; i < 20000; i++)
		cn_buf_puts(&b, "<o/>");
	cn_buf_puts(&b, "</r>");
	CHECK_EQ_INT(cn_xml_parse(b.p, b.len, &root), CN_ERR_TOO_LARGE);
	/* more than 1 MiB of text */
	b.len = 0;
	cn_buf_puts(&b, "<r>");
	for (int i = 0; i < 1100; i++) {
		char chunk[1024];
		memset(chunk, 'x', sizeof chunk);
		cn_buf_append(&b, chunk, sizeof chunk);
	}
	cn_buf_puts(&b, "</r>");
	CHECK_EQ_INT(cn_xml_parse(b.p, b.len, &root), CN_ERR_TOO_LARGE);
	/* ... which a caller whose API allows more can take, up to its own limit (the name
	 * "r" counts too) */
	CHECK_EQ_INT(cn_xml_parse_max(b.p, b.len, 1 + 1100 * 1024, &root), CN_OK);
	if (root)
		CHECK_EQ_INT(root->text_len, 1100 * 1024);
	cn_xml_free(root);
	CHECK_EQ_INT(cn_xml_parse_max(b.p, b.len, 1100 * 1024, &root), CN_ERR_TOO_LARGE);
	/* text split across many elements counts in total */
	b.len = 0;
	cn_buf_puts(&b, "<r>");
	for (int i = 0; i < 600; i++) {
		cn_buf_puts(&b, "<t>");
		char chunk[2048];
		memset(chunk, 'y', sizeof chunk);
		cn_buf_append(&b, chunk, sizeof chunk);
		cn_buf_puts(&b, "</t>");
	}
	cn_buf_puts(&b, "</r>");
	CHECK_EQ_INT(cn_xml_parse(b.p, b.len, &root), CN_ERR_TOO_LARGE);
	/* a big but legal text node is kept whole */
	b.len = 0;
	cn_buf_puts(&b, "<r>");
	for (int i = 0; i < 500; i++) {
		char chunk[1000];
		memset(chunk, 'z', sizeof chunk);
		cn_buf_append(&b, chunk, sizeof chunk);
	}
	cn_buf_puts(&b, "</r>");
	CHECK_EQ_INT(cn_xml_parse(b.p, b.len, &root), CN_OK);
	if (root)
		CHECK_EQ_INT(root->text_len, 500000);
	cn_xml_free(root);
	cn_buf_fini(&b);
}

int main(void)
{
	RUN(writer_escapes);
	RUN(writer_document);
	RUN(writer_roundtrip_all_bytes);
	RUN(parse_delete);
	RUN(parse_prefixes_and_text);
	RUN(parse_malformed);
	RUN(parse_refuses_doctype_and_entities);
	RUN(parse_limits);
	TEST_END();
}
