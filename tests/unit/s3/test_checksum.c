/* test_checksum: the S3 additional checksums (src/s3/checksum.c) — the catalogue check
 * values of "123456789" and of the empty input for all five algorithms, the base64 wire
 * form, every two-piece split of a message equal to the one-shot digest, CRC-64/NVME
 * against a bit-at-a-time reference at every alignment, and value decoding. */
#include "s3/checksum.h"
#include "test.h"

static const char check_msg[] = "123456789";

static void hexof(cn_cksum_algo a, const void *p, size_t len, char *out)
{
	cn_cksum c;
	unsigned char d[CN_CKSUM_MAX_DIGEST];
	CHECK(cn_cksum_init(&c, a) == CN_OK);
	cn_cksum_update(&c, p, len);
	cn_cksum_final(&c, d);
	cn_cksum_fini(&c);
	cn_hex_encode(d, cn_cksum_len(a), out);
}

static void b64of(cn_cksum_algo a, const void *p, size_t len, char *out)
{
	cn_cksum c;
	CHECK(cn_cksum_init(&c, a) == CN_OK);
	cn_cksum_update(&c, p, len);
	cn_cksum_final_base64(&c, out);
	cn_cksum_fini(&c);
}

TEST(check_values)
{
	char h[2 * CN_CKSUM_MAX_DIGEST + 1];
	hexof(CN_CKSUM_CRC32, check_msg, 9, h);
	CHECK_EQ_STR(h, "cbf43926");
	hexof(CN_CKSUM_CRC32C, check_msg, 9, h);
	CHECK_EQ_STR(h, "e3069283");
	hexof(CN_CKSUM_CRC64NVME, check_msg, 9, h);
	CHECK_EQ_STR(h, "ae8b14860a799888");
	hexof(CN_CKSUM_SHA1, check_msg, 9, h);
	CHECK_EQ_STR(h, "f7c3bc1d808e04732adf679965ccc34ca7ae3441");
	hexof(CN_CKSUM_SHA256, check_msg, 9, h);
	CHECK_EQ_STR(h, "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225");
}

TEST(empty_input)
{
	char h[2 * CN_CKSUM_MAX_DIGEST + 1], b[CN_CKSUM_MAX_B64];
	hexof(CN_CKSUM_CRC32, "", 0, h);
	CHECK_EQ_STR(h, "00000000");
	hexof(CN_CKSUM_CRC32C, "", 0, h);
	CHECK_EQ_STR(h, "00000000");
	hexof(CN_CKSUM_CRC64NVME, "", 0, h);
	CHECK_EQ_STR(h, "0000000000000000");
	hexof(CN_CKSUM_SHA1, "", 0, h);
	CHECK_EQ_STR(h, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	hexof(CN_CKSUM_SHA256, "", 0, h);
	CHECK_EQ_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	b64of(CN_CKSUM_CRC32, "", 0, b);
	CHECK_EQ_STR(b, "AAAAAA==");
	b64of(CN_CKSUM_SHA256, "", 0, b);
	CHECK_EQ_STR(b, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
}

TEST(base64_wire_form)
{
	char b[CN_CKSUM_MAX_B64];
	b64of(CN_CKSUM_CRC32, check_msg, 9, b);
	CHECK_EQ_STR(b, "y/Q5Jg==");
	b64of(CN_CKSUM_CRC32C, check_msg, 9, b);
	CHECK_EQ_STR(b, "4waSgw==");
	b64of(CN_CKSUM_CRC64NVME, check_msg, 9, b);
	CHECK_EQ_STR(b, "rosUhgp5mIg=");
	b64of(CN_CKSUM_SHA1, check_msg, 9, b);
	CHECK_EQ_STR(b, "98O8HYCOBHMq32eZZczDTKeuNEE=");
	b64of(CN_CKSUM_SHA256, check_msg, 9, b);
	CHECK_EQ_STR(b, "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=");
	/* "Hello world" as in AWS examples of x-amz-checksum-crc32c. */
	b64of(CN_CKSUM_CRC32, "hello world", 11, b);
	CHECK_EQ_STR(b, "DUoRhQ==");
}

static uint64_t crc64nvme_bitwise(const unsigned char *p, size_t n)
{
	uint64_t c = ~0ULL;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x9a6c9329ac4bc9b5ULL : c >> 1;
	}
	return ~c;
}

static unsigned char data[1031];
static void fill(void)
{
	uint32_t x = 2463534242u;
	for (size_t i = 0; i < sizeof(data); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[i] = (unsigned char)x;
	}
}

TEST(crc64_reference_every_alignment)
{
	for (size_t off = 0; off < 16; off++)
		for (size_t n = 0; n + off <= sizeof(data); n += (n < 40 ? 1 : 97))
			CHECK(cn_crc64nvme(0, data + off, n) == crc64nvme_bitwise(data + off, n));
	uint64_t c = cn_crc64nvme(0, check_msg, 4);
	CHECK(cn_crc64nvme(c, check_msg + 4, 5) == 0xae8b14860a799888ULL);
}

TEST(incremental_every_split)
{
	for (int a = CN_CKSUM_CRC32; a < CN_CKSUM__COUNT; a++) {
		unsigned char whole[CN_CKSUM_MAX_DIGEST], part[CN_CKSUM_MAX_DIGEST];
		cn_cksum c;
		size_t len = cn_cksum_len((cn_cksum_algo)a);
		CHECK(cn_cksum_init(&c, (cn_cksum_algo)a) == CN_OK);
		cn_cksum_update(&c, data, sizeof(data));
		cn_cksum_final(&c, whole);
		cn_cksum_fini(&c);
		int bad = 0;
		for (size_t s = 0; s <= sizeof(data); s++) {
			CHECK(cn_cksum_init(&c, (cn_cksum_algo)a) == CN_OK);
			cn_cksum_update(&c, data, s);
			cn_cksum_update(&c, data + s, 0);
			cn_cksum_update(&c, data + s, sizeof(data) - s);
			cn_cksum_final(&c, part);
			cn_cksum_fini(&c);
			bad += memcmp(whole, part, len) != 0;
		}
		CHECK_EQ_INT(bad, 0);
		/* byte by byte */
		CHECK(cn_cksum_init(&c, (cn_cksum_algo)a) == CN_OK);
		for (size_t i = 0; i < sizeof(data); i++)
			cn_cksum_update(&c, data + i, 1);
		cn_cksum_final(&c, part);
		cn_cksum_fini(&c);
		CHECK_MEM(whole, part, len);
	}
	/* all splits of the check message into three pieces */
	for (size_t i = 0; i <= 9; i++)
		for (size_t j = i; j <= 9; j++) {
			char h[2 * CN_CKSUM_MAX_DIGEST + 1];
			unsigned char d[CN_CKSUM_MAX_DIGEST];
			cn_cksum c;
			CHECK(cn_cksum_init(&c, CN_CKSUM_CRC32C) == CN_OK);
			cn_cksum_update(&c, check_msg, i);
			cn_cksum_update(&c, check_msg + i, j - i);
			cn_cksum_update(&c, check_msg + j, 9 - j);
			cn_cksum_final(&c, d);
			cn_cksum_fini(&c);
			cn_hex_encode(d, 4, h);
			CHECK_EQ_STR(h, "e3069283");
		}
}

TEST(names)
{
	CHECK(cn_cksum_from_name(cn_str_c("crc32")) == CN_CKSUM_CRC32);
	CHECK(cn_cksum_from_name(cn_str_c("CRC32C")) == CN_CKSUM_CRC32C);
	CHECK(cn_cksum_from_name(cn_str_c("Crc64Nvme")) == CN_CKSUM_CRC64NVME);
	CHECK(cn_cksum_from_name(cn_str_c("SHA1")) == CN_CKSUM_SHA1);
	CHECK(cn_cksum_from_name(cn_str_c("sha256")) == CN_CKSUM_SHA256);
	CHECK(cn_cksum_from_name(cn_str_c("md5")) == CN_CKSUM_NONE);
	CHECK(cn_cksum_from_name(cn_str_c("")) == CN_CKSUM_NONE);
	CHECK(cn_cksum_from_header(cn_str_c("X-Amz-Checksum-CRC32C")) == CN_CKSUM_CRC32C);
	CHECK(cn_cksum_from_header(cn_str_c("x-amz-checksum-")) == CN_CKSUM_NONE);
	CHECK(cn_cksum_from_header(cn_str_c("x-amz-checksum-mode")) == CN_CKSUM_NONE);
	CHECK(cn_cksum_from_header(cn_str_c("x-amz-checksum")) == CN_CKSUM_NONE);
	CHECK_EQ_STR(cn_cksum_header(CN_CKSUM_CRC64NVME), "x-amz-checksum-crc64nvme");
	CHECK_EQ_STR(cn_cksum_name(CN_CKSUM_SHA256), "SHA256");
	CHECK(cn_cksum_header(CN_CKSUM_NONE) == NULL);
	cn_cksum c;
	CHECK(cn_cksum_init(&c, CN_CKSUM_NONE) == CN_ERR_INVALID);
	cn_cksum_fini(&c);
}

TEST(decode)
{
	unsigned char d[CN_CKSUM_MAX_DIGEST];
	CHECK(cn_cksum_decode(CN_CKSUM_CRC32, cn_str_c("y/Q5Jg=="), d) == CN_OK);
	CHECK(d[0] == 0xcb && d[3] == 0x26);
	CHECK(cn_cksum_decode(CN_CKSUM_CRC64NVME, cn_str_c("rosUhgp5mIg="), d) == CN_OK);
	CHECK(d[0] == 0xae && d[7] == 0x88);
	CHECK(cn_cksum_decode(CN_CKSUM_SHA256,
	                      cn_str_c("FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU="), d) == CN_OK);
	CHECK(cn_cksum_decode(CN_CKSUM_CRC32, cn_str_c("y/Q5Jg"), d) == CN_ERR_INVALID);
	CHECK(cn_cksum_decode(CN_CKSUM_CRC32, cn_str_c("y/Q5Jg=x"), d) == CN_ERR_INVALID);
	CHECK(cn_cksum_decode(CN_CKSUM_CRC32, cn_str_c("rosUhgp5mIg="), d) == CN_ERR_INVALID);
	CHECK(cn_cksum_decode(CN_CKSUM_CRC32C, cn_str_c(""), d) == CN_ERR_INVALID);
	CHECK(cn_cksum_decode(CN_CKSUM_SHA1, cn_str_c("y/Q5Jg=="), d) == CN_ERR_INVALID);
	CHECK(cn_cksum_decode(CN_CKSUM_NONE, cn_str_c("y/Q5Jg=="), d) == CN_ERR_INVALID);
	CHECK(cn_cksum_decode(CN_CKSUM_CRC32, cn_str_c("y/Q5J!=="), d) == CN_ERR_INVALID);
}

int main(void)
{
	fill();
	RUN(check_values);
	RUN(empty_input);
	RUN(base64_wire_form);
	RUN(crc64_reference_every_alignment);
	RUN(incremental_every_split);
	RUN(names);
	RUN(decode);
	TEST_END();
}
