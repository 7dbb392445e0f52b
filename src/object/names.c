/* names.c: the bucket name and object key rules (object.h): S3's bucket naming, and keys
 * of 1..1024 bytes of UTF-8 that the drive layout can store whatever their components
 * (docs/FORMAT.md §3). Every entry point of the module checks its names here before it
 * touches a drive. */
#include "object/object_int.h"

#include <string.h>

static bool is_ipv4(const char *s)
{
	int parts = 0;
	while (*s) {
		int digits = 0;
		while (*s >= '0' && *s <= '9') {
			s++;
			digits++;
		}
		if (digits == 0 || digits > 3)
			return false;
		parts++;
		if (*s == '.')
			s++;
		else if (*s)
			return false;
	}
	return parts == 4;
}

bool cn_obj_bucket_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '.' && c != '-')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
		if (c == '.' && name[i + 1] == '.')
			return false;
	}
	if (is_ipv4(name) || strncmp(name, "xn--", 4) == 0)
		return false;
	if (n >= 8 && strcmp(name + n - 8, "-s3alias") == 0)
		return false;
	return true;
}

/* Key rules (object.h), plus the layout's own limit (docs/FORMAT.md §3): every component,
 * once escaped, must fit a 255-byte file name. */
cn_err cn_obj_key_check(const char *key, size_t len)
{
	if (len == 0)
		return CN_ERR_BAD_KEY;
	if (len > 1024)
		return CN_ERR_KEY_TOO_LONG;
	if (memchr(key, 0, len) || !cn_utf8_valid(key, len))
		return CN_ERR_BAD_KEY;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && key[i] != '/')
			continue;
		size_t cl = i - start;
		bool esc = cl == 0 || key[start] == '%' || (cl == 1 && key[start] == '.') ||
		           (cl == 2 && key[start] == '.' && key[start + 1] == '.');
		if (cl + (esc ? 2 : 0) > 255)
			return CN_ERR_BAD_KEY;
		start = i + 1;
	}
	return CN_OK;
}

cn_err cn_obj__check_names(const char *bucket, const char *key)
{
	if (!cn_obj_bucket_name_valid(bucket))
		return CN_ERR_NO_BUCKET;
	return cn_obj_key_check(key, strlen(key));
}
