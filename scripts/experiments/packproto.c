/* packproto: an experiment, not part of cairn's build. The storage cost of a small
 * erasure-coded PUT in two layouts, both durable, without HTTP, hashing or coding:
 *   files: per drive, create tmp/<id>, write the record, rename it to vol/<b>/%m.<key>;
 *          then one syncfs group commit shared by all threads (cairn's layout and default
 *          durability, docs/FORMAT.md §2)
 *   lmdb:  per drive, an LMDB environment (MDB_NOMETASYNC: one fdatasync per commit);
 *          a committer thread per drive puts every waiting record in one write
 *          transaction (group commit) — what packing small objects' records into a
 *          per-drive B+tree would cost (docs/PERF.md, twelfth session)
 * Build and run (needs Debian's liblmdb-dev, which cairn does not depend on):
 *   cc -O2 -pthread -o /tmp/packproto scripts/experiments/packproto.c -llmdb
 *   /tmp/packproto files|lmdb DIR DRIVES RECLEN THREADS SECONDS
 * e.g. 4 drives EC:2, a 4 KiB object: RECLEN 2300 (a 2 KiB shard and the record's
 * fields); 16 drives EC:4: RECLEN 650. DIR: a fresh folder on the disk to measure. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int mode, ndrives, reclen, nthreads;
static double dur;
static int dfd[64];
static atomic_long ops;
static volatile int stop;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* --- files + syncfs group commit ------------------------------------------------ */
static pthread_mutex_t smu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t scv = PTHREAD_COND_INITIALIZER;
static long started, done; /* syncfs generations */
static int running;

static void group_sync(void)
{
	pthread_mutex_lock(&smu);
	long need = started + 1; /* a syncfs that starts after our renames */
	while (done < need) {
		if (!running) {
			running = 1;
			long gen = ++started;
			pthread_mutex_unlock(&smu);
			syncfs(dfd[0]);
			pthread_mutex_lock(&smu);
			done = gen;
			running = 0;
			pthread_cond_broadcast(&scv);
		} else {
			pthread_cond_wait(&scv, &smu);
		}
	}
	pthread_mutex_unlock(&smu);
}

/* --- lmdb with a committer per drive --------------------------------------------- */
typedef struct req {
	struct req *next;
	char key[64];
	const char *rec;
	int done;
} req;
typedef struct env {
	MDB_env *e;
	MDB_dbi dbi;
	pthread_mutex_t mu;
	pthread_cond_t cv, dcv;
	req *head;
	pthread_t th;
} env;
static env envs[64];

static void *committer(void *a)
{
	env *v = a;
	for (;;) {
		pthread_mutex_lock(&v->mu);
		while (!v->head && !stop)
			pthread_cond_wait(&v->cv, &v->mu);
		req *batch = v->head;
		v->head = NULL;
		pthread_mutex_unlock(&v->mu);
		if (!batch && stop)
			return NULL;
		MDB_txn *t;
		if (mdb_txn_begin(v->e, NULL, 0, &t)) abort();
		for (req *r = batch; r; r = r->next) {
			MDB_val k = { strlen(r->key), r->key }, d = { (size_t)reclen, (void *)r->rec };
			if (mdb_put(t, v->dbi, &k, &d, 0)) abort();
		}
		if (mdb_txn_commit(t)) abort();
		pthread_mutex_lock(&v->mu);
		for (req *r = batch; r; r = r->next)
			r->done = 1;
		pthread_cond_broadcast(&v->dcv);
		pthread_mutex_unlock(&v->mu);
	}
}

static void *worker(void *a)
{
	long t = (long)a;
	char *rec = malloc(reclen);
	memset(rec, 'r', reclen);
	req rq[64];
	for (long i = 0; !stop; i++) {
		char key[64];
		snprintf(key, sizeof key, "bench/obj-%ld-%ld", t, i);
		if (mode == 0) {
			for (int d = 0; d < ndrives; d++) {
				char tmp[64], dst[96];
				snprintf(tmp, sizeof tmp, "tmp/%02ld/%ld-%ld", (t + i) % 64, t, i);
				snprintf(dst, sizeof dst, "vol/bench/%%m.obj-%ld-%ld", t, i);
				int fd = openat(dfd[d], tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
				if (fd < 0 || write(fd, rec, reclen) != reclen) abort();
				if (renameat(dfd[d], tmp, dfd[d], dst)) abort();
				close(fd);
			}
			group_sync();
		} else {
			for (int d = 0; d < ndrives; d++) {
				env *v = &envs[d];
				req *r = &rq[d];
				strcpy(r->key, key);
				r->rec = rec;
				r->done = 0;
				pthread_mutex_lock(&v->mu);
				r->next = v->head;
				v->head = r;
				pthread_cond_signal(&v->cv);
				pthread_mutex_unlock(&v->mu);
			}
			for (int d = 0; d < ndrives; d++) {
				env *v = &envs[d];
				pthread_mutex_lock(&v->mu);
				while (!rq[d].done)
					pthread_cond_wait(&v->dcv, &v->mu);
				pthread_mutex_unlock(&v->mu);
			}
		}
		atomic_fetch_add(&ops, 1);
	}
	free(rec);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: packproto files|lmdb DIR DRIVES RECLEN THREADS SECONDS\n");
		return 2;
	}
	mode = strcmp(argv[1], "lmdb") == 0;
	ndrives = atoi(argv[3]);
	reclen = atoi(argv[4]);
	nthreads = atoi(argv[5]);
	dur = atof(argv[6]);
	for (int d = 0; d < ndrives; d++) {
		char p[512];
		snprintf(p, sizeof p, "%s/d%d", argv[2], d);
		mkdir(p, 0755);
		dfd[d] = open(p, O_DIRECTORY);
		if (mode == 0) {
			mkdirat(dfd[d], "tmp", 0755);
			mkdirat(dfd[d], "vol", 0755);
			mkdirat(dfd[d], "vol/bench", 0755);
			for (int i = 0; i < 64; i++) {
				char s[16];
				snprintf(s, sizeof s, "tmp/%02d", i);
				mkdirat(dfd[d], s, 0755);
			}
		} else {
			env *v = &envs[d];
			pthread_mutex_init(&v->mu, NULL);
			pthread_cond_init(&v->cv, NULL);
			pthread_cond_init(&v->dcv, NULL);
			if (mdb_env_create(&v->e) || mdb_env_set_mapsize(v->e, 8ull << 30) ||
			    mdb_env_open(v->e, p, MDB_NOTLS | MDB_NOMETASYNC, 0644))
				abort();
			MDB_txn *t;
			mdb_txn_begin(v->e, NULL, 0, &t);
			mdb_dbi_open(t, NULL, 0, &v->dbi);
			mdb_txn_commit(t);
			pthread_create(&v->th, NULL, committer, v);
		}
	}
	pthread_t th[256];
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	double t0 = now();
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	usleep((useconds_t)(dur * 1e6));
	stop = 1;
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	double el = now() - t0;
	for (int d = 0; mode == 1 && d < ndrives; d++) {
		pthread_mutex_lock(&envs[d].mu);
		pthread_cond_signal(&envs[d].cv);
		pthread_mutex_unlock(&envs[d].mu);
		pthread_join(envs[d].th, NULL);
	}
	getrusage(RUSAGE_SELF, &r1);
	double cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
	             (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	long n = atomic_load(&ops);
	printf("%s drives=%d reclen=%d threads=%d: %.0f objects/s, %.0f us CPU per object\n", argv[1], ndrives,
	       reclen, nthreads, n / el, cpu * 1e6 / n);
	return 0;
}
