/* crashput: a crash-test helper (not a unit test). Loops putting objects with content
 * derived from the key, durable, and prints each key to stdout (flushed) only after
 * cn_obj_put returned CN_OK. The integration test kill -9s it, then checks that every
 * printed key reads back with the expected content.
 * Usage: crashput DIR [COUNT] [MAXSIZE]   (bucket "crash"; keys "k/<n>")
 * Content of key k/<n>: size = (n * 7919) % (MAXSIZE + 1) bytes, byte i = (n * 31 + i) & 0xff. */
#include "object/object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gen {
	cn_reader r;
	long n;
	size_t size, pos;
} gen;

static ssize_t gen_read(cn_reader *r, void *buf, size_t len)
{
	gen *g = (gen *)r;
	size_t k = g->size - g->pos < len ? g->size - g->pos : len;
	unsigned char *b = buf;
	for (size_t i = 0; i < k; i++)
		b[i] = (unsigned char)((g->n * 31 + (long)(g->pos + i)) & 0xff);
	g->pos += k;
	return (ssize_t)k;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: crashput DIR [COUNT] [MAXSIZE]\n");
		return 2;
	}
	long count = argc > 2 ? atol(argv[2]) : 1000000;
	long maxsize = argc > 3 ? atol(argv[3]) : 300000;
	cn_obj_config cfg = { .durable = true, .inline_max = 128 * 1024 };
	const char *d[] = { argv[1] };
	cn_obj_store *s;
	cn_err e = cn_obj_store_open(d, 1, &cfg, &s);
	if (e) {
		fprintf(stderr, "open: %s\n", cn_err_str(e));
		return 1;
	}
	e = cn_obj_make_bucket(s, "crash");
	if (e && e != CN_ERR_BUCKET_EXISTS) {
		fprintf(stderr, "make bucket: %s\n", cn_err_str(e));
		return 1;
	}
	for (long n = 0; n < count; n++) {
		char key[32];
		snprintf(key, sizeof key, "k/%ld", n);
		gen g = { { gen_read }, n, (size_t)((n * 7919) % (maxsize + 1)), 0 };
		cn_put_opts o = { .size = (int64_t)g.size };
		e = cn_obj_put(s, "crash", key, &g.r, &o, NULL);
		if (e) {
			fprintf(stderr, "put %s: %s\n", key, cn_err_str(e));
			return 1;
		}
		printf("%s\n", key);
		fflush(stdout);
	}
	cn_obj_store_close(s);
	return 0;
}
