/* fuzz/xml: the s3 XML parser (src/s3/xml.c) on arbitrary bytes. Whatever parses is written
 * back with the escaping writer and parsed again: the second tree must equal the first
 * (names, text byte for byte, shape), so the writer's output is always well-formed and
 * the parser's limits, DOCTYPE/entity refusal and memory handling are exercised. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3/xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_tree(cn_buf *b, const cn_xml_node *n)
{
	for (; n; n = n->next) {
		if (cn_xml_open(b, n->name, NULL) || cn_xml_escape(b, n->text, n->text_len))
			abort();
		write_tree(b, n->child);
		if (cn_xml_close(b, n->name))
			abort();
	}
}

static void same_tree(const cn_xml_node *a, const cn_xml_node *b)
{
	for (; a || b; a = a->next, b = b->next) {
		if (!a || !b || strcmp(a->name, b->name) || a->text_len != b->text_len ||
		    memcmp(a->text, b->text, a->text_len) || a->text[a->text_len] != 0)
			abort();
		same_tree(a->child, b->child);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cn_xml_node *root = NULL;
	if (cn_xml_parse((const char *)data, size, &root) != CN_OK)
		return 0;
	cn_buf b;
	cn_buf_init(&b);
	write_tree(&b, root);
	cn_xml_node *again = NULL;
	if (cn_xml_parse(b.p, b.len, &again) != CN_OK)
		abort();
	same_tree(root, again);
	cn_xml_free(again);
	cn_xml_free(root);
	cn_buf_fini(&b);
	return 0;
}
