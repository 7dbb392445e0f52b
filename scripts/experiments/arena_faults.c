/* arena_faults.c: what glibc's heaps cost on first touch, main arena against a thread's.
 * Allocates 3,000 blocks of 32,800 bytes (a 4-drive 64 KiB object's two cached records
 * are about this), writes them, frees them, three rounds, in the main thread and then in
 * a second thread (its own arena), printing minor faults and microseconds per 64 KiB.
 * docs/PERF.md "Where a GET's server CPU also goes" quotes its output.
 *   gcc -O2 -pthread -o /tmp/arena_faults scripts/experiments/arena_faults.c
 *   GLIBC_TUNABLES=glibc.malloc.hugetlb=1 /tmp/arena_faults   # as cairn server runs
 *   GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.arena_max=1 /tmp/arena_faults */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define N 3000
#define SZ 32800

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long faults(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

static void *run(void *name)
{
	static void *v[N];
	for (int r = 0; r < 3; r++) {
		long f = faults();
		double t = now();
		for (int i = 0; i < N; i++) {
			v[i] = malloc(SZ);
			if (!v[i])
				abort();
			memset(v[i], 1, SZ);
		}
		double d = now() - t;
		printf("%-6s round %d: %6ld faults, %4.0f us per 64 KiB\n", (const char *)name, r,
		       faults() - f, d * 1e6 / ((double)N * SZ / 65536));
		for (int i = 0; i < N; i++)
			free(v[i]);
	}
	return NULL;
}

int main(void)
{
	run("main");
	pthread_t t;
	if (pthread_create(&t, NULL, run, "thread"))
		return 1;
	pthread_join(t, NULL);
	return 0;
}
