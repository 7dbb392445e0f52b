/* replay_main: runs a libFuzzer driver's LLVMFuzzerTestOneInput over every file of a corpus
 * folder, without libFuzzer, so that `make check` replays the corpora under gcc (and under
 * ASan/UBSan with MODE=asan). Usage: driver CORPUS_DIR */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 2;
	}
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		long len = ftell(f);
		fseek(f, 0, SEEK_SET);
		uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
		if (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len)
			len = 0;
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)(len > 0 ? len : 0));
		free(buf);
		n++;
	}
	closedir(d);
	printf("%s: replayed %d inputs\n", argv[0], n);
	return 0;
}
