/* Unit tests of the drive health decorator (drive.h cn_drive_health_wrap) over a
 * fault-injecting drive: I/O errors and stalls take the drive offline, offline calls do
 * not reach the drive, data-level answers do not count, and the prober brings it back. */
#include "drive/drive.h"
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

/* A fault injector in front of a local drive: fail makes every call CN_ERR_IO, delay_ms
 * makes every call sleep first; calls counts what reached it. */
typedef struct fdrive {
	cn_drive base;
	cn_drive *in;
	atomic_int fail, delay_ms, calls;
} fdrive;

static fdrive *F(cn_drive *d) { return (fdrive *)d; }

static cn_err gate(fdrive *f)
{
	atomic_fetch_add(&f->calls, 1);
	int ms = atomic_load(&f->delay_ms);
	if (ms)
		usleep((useconds_t)ms * 1000);
	return atomic_load(&f->fail) ? CN_ERR_IO : CN_OK;
}

static void f_close(cn_drive *d) { cn_drive_close(F(d)->in); free(d); }
static cn_err f_info(cn_drive *d, cn_drive_info *o)
{
	cn_err e = gate(F(d));
	return e ? e : F(d)->in->ops->info(F(d)->in, o);
}
static cn_err f_read_sys(cn_drive *d, const char *n, size_t max, cn_buf *o)
{
	cn_err e = gate(F(d));
	return e ? e : F(d)->in->ops->read_sys(F(d)->in, n, max, o);
}
static cn_err f_write_sys(cn_drive *d, const char *n, const void *p, size_t len)
{
	cn_err e = gate(F(d));
	return e ? e : F(d)->in->ops->write_sys(F(d)->in, n, p, len);
}
static cn_err f_stat_vol(cn_drive *d, const char *v, int64_t *ms)
{
	cn_err e = gate(F(d));
	return e ? e : F(d)->in->ops->stat_vol(F(d)->in, v, ms);
}

/* Answers from the gate alone (no volume needed): a write that waits as long as told. */
static cn_err f_version_write(cn_drive *d, const char *v, const char *k, const char *vid,
                              const void *rec, size_t len)
{
	return gate(F(d));
}

static cn_err f_sync(cn_drive *d)
{
	cn_err e = gate(F(d));
	return e ? e : F(d)->in->ops->sync(F(d)->in);
}

static cn_err f_reopen(cn_drive *d)
{
	cn_err e = gate(F(d));
	return e ? e : F(d)->in->ops->reopen(F(d)->in);
}

static const cn_drive_ops fops = {
	.close = f_close, .info = f_info, .read_sys = f_read_sys, .write_sys = f_write_sys,
	.stat_vol = f_stat_vol, .sync = f_sync, .reopen = f_reopen, .version_write = f_version_write,
};

static bool wait_online(cn_drive *h, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (!cn_drive_health_offline(h))
			return true;
		usleep(10000);
	}
	return !cn_drive_health_offline(h);
}

/* A health wrapper (cfg; NULL: stall 200 ms, probe every 30 ms) over a fault injector over
 * a local drive in a fresh folder /tmp/<name>.<pid> (written to dir); *fp: the injector. */
static cn_drive *open_wrapped_cfg(char dir[64], const char *name, fdrive **fp,
                                  const cn_drive_health_cfg *c)
{
	snprintf(dir, 64, "/tmp/%s.%d", name, (int)getpid());
	cn_drive *local;
	CN_ASSERT(cn_drive_local_open(dir, false, &local) == CN_OK);
	fdrive *f = calloc(1, sizeof *f);
	CN_ASSERT(f);
	f->base.ops = &fops;
	snprintf(f->base.endpoint, sizeof f->base.endpoint, "%s", dir);
	f->in = local;
	cn_drive_health_cfg cfg = { .stall_ms = 200, .probe_ms = 30 };
	cn_drive *h;
	CN_ASSERT(cn_drive_health_wrap(&f->base, c ? c : &cfg, &h) == CN_OK);
	*fp = f;
	return h;
}

static cn_drive *open_wrapped(char dir[64], const char *name, fdrive **fp)
{
	return open_wrapped_cfg(dir, name, fp, NULL);
}

static void close_wrapped(cn_drive *h, const char *dir)
{
	cn_drive_close(h);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

TEST(test_errors_and_stalls)
{
	char dir[64];
	fdrive *f;
	cn_drive *h = open_wrapped(dir, "cn_health_test", &f);

	CHECK_EQ_INT(h->ops->write_sys(h, "x", "abc", 3), CN_OK);
	CHECK_EQ_INT(h->ops->stat_vol(h, "nobucket", NULL), CN_ERR_NO_BUCKET); /* data answer */
	CHECK(!cn_drive_health_offline(h));
	cn_drive_info d0;
	CHECK_EQ_INT(h->ops->info(h, &d0), CN_OK);
	CHECK(d0.online && d0.outages == 0);

	/* an I/O error takes it offline; offline calls do not reach the drive */
	atomic_store(&f->fail, 1);
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_ERR_IO);
	CHECK(cn_drive_health_offline(h));
	cn_drive_info di;
	CHECK_EQ_INT(h->ops->info(h, &di), CN_OK);
	CHECK(!di.online && di.outages == 1);
	int before = atomic_load(&f->calls);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_ERR_OFFLINE);
	CHECK_EQ_INT(h->ops->write_sys(h, "y", "1", 1), CN_ERR_OFFLINE);
	/* only the prober may have called (info + write + read per probe, failing at info) */
	usleep(100000);
	CHECK(cn_drive_health_offline(h)); /* still failing: stays offline */
	(void)before;

	/* recovery */
	atomic_store(&f->fail, 0);
	CHECK(wait_online(h, 2000));
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_OK);
	CHECK(b.len == 3 && !memcmp(b.p, "abc", 3));

	/* a stall beyond the limit also takes it offline, and it comes back when fast again */
	atomic_store(&f->delay_ms, 300);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_OK); /* slow but answered */
	CHECK(cn_drive_health_offline(h));
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_ERR_OFFLINE); /* skipped at once */
	atomic_store(&f->delay_ms, 0);
	CHECK(wait_online(h, 2000));
	/* online again, and the outages counted: whoever looks now sees it was away twice,
	 * however short each absence (the drive monitor's "came back", object/monitor.c) */
	CHECK_EQ_INT(h->ops->info(h, &di), CN_OK);
	CHECK(di.online && di.outages == 2);
	cn_buf_fini(&b);
	close_wrapped(h, dir);
}

/* HEALTH-5: a refused drive answers like an offline one, nothing reaches it but the format
 * read (and reopen, replaced), and no probe brings it back; admitted again, it serves. */
TEST(test_refused)
{
	char dir[64];
	fdrive *f;
	cn_drive *h = open_wrapped(dir, "cn_health_refuse", &f);
	CHECK_EQ_INT(h->ops->write_sys(h, "format", "fmt", 3), CN_OK);
	CHECK_EQ_INT(h->ops->write_sys(h, "x", "abc", 3), CN_OK);

	cn_drive_health_refuse(h, true);
	int before = atomic_load(&f->calls);
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_ERR_OFFLINE);
	CHECK_EQ_INT(h->ops->write_sys(h, "y", "1", 1), CN_ERR_OFFLINE);
	CHECK_EQ_INT(h->ops->stat_vol(h, "nobucket", NULL), CN_ERR_OFFLINE);
	cn_drive_info di;
	CHECK_EQ_INT(h->ops->info(h, &di), CN_OK);
	CHECK(!di.online);
	CHECK_EQ_INT(atomic_load(&f->calls), before); /* none of them reached the drive */
	CHECK_EQ_INT(h->ops->read_sys(h, "format", 100, &b), CN_OK); /* what decides */
	CHECK(b.len == 3 && !memcmp(b.p, "fmt", 3));
	CHECK(!h->ops->replaced(h));
	usleep(150000); /* several probe intervals: nothing brings it back */
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_ERR_OFFLINE);
	CHECK(!cn_drive_health_offline(h)); /* refused, not counted as an outage */

	cn_drive_health_refuse(h, false);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_OK);
	CHECK(b.len == 3 && !memcmp(b.p, "abc", 3));
	CHECK_EQ_INT(h->ops->info(h, &di), CN_OK);
	CHECK(di.online && di.outages == 0);
	cn_buf_fini(&b);
	close_wrapped(h, dir);
}

/* HEALTH-6: a call that hangs takes the drive offline while it is still hung (the prober watches
 * calls in progress), so other callers skip the drive at once instead of queueing behind
 * it; when the call returns and the drive is fast again, a probe brings it back. */
typedef struct hung_arg {
	cn_drive *h;
	cn_err e;
	atomic_int done;
	int kind; /* SLOW_READ, SLOW_SYNC or SLOW_WRITE: read_sys, sync or version_write */
} hung_arg;
enum { SLOW_READ, SLOW_SYNC, SLOW_WRITE };

static void *hung_call(void *p)
{
	hung_arg *a = p;
	cn_buf b;
	cn_buf_init(&b);
	a->e = a->kind == SLOW_SYNC    ? a->h->ops->sync(a->h)
	       : a->kind == SLOW_WRITE ? a->h->ops->version_write(a->h, "vol", "k", "v1", "w", 1)
	                               : a->h->ops->read_sys(a->h, "x", 100, &b);
	cn_buf_fini(&b);
	atomic_store(&a->done, 1);
	return NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

TEST(test_hung_call_watchdog)
{
	char dir[64];
	fdrive *f;
	cn_drive *h = open_wrapped(dir, "cn_health_hung", &f); /* stall 200 ms */
	CHECK_EQ_INT(h->ops->write_sys(h, "x", "abc", 3), CN_OK);
	atomic_store(&f->delay_ms, 2000);
	hung_arg a = { .h = h };
	pthread_t t;
	int64_t t0 = now_ms();
	CHECK(pthread_create(&t, NULL, hung_call, &a) == 0);
	while (!cn_drive_health_offline(h) && now_ms() - t0 < 1500)
		usleep(5000);
	int64_t took = now_ms() - t0;
	CHECK(cn_drive_health_offline(h));
	CHECK(took >= 200 && took < 1000); /* after the limit, well before the call returns */
	CHECK(!atomic_load(&a.done)); /* HEALTH-4: the hung call is still inside the drive */
	/* another caller skips it at once, without reaching the drive */
	int calls = atomic_load(&f->calls);
	int64_t t1 = now_ms();
	cn_buf b;
	cn_buf_init(&b);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_ERR_OFFLINE);
	CHECK(now_ms() - t1 < 100);
	(void)calls;
	atomic_store(&f->delay_ms, 0);
	pthread_join(t, NULL);
	CHECK_EQ_INT(a.e, CN_OK); /* HEALTH-4: not interrupted, it completed with its own answer */
	CHECK(wait_online(h, 5000));
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_OK);
	/* a fast drive is never taken offline by the watchdog */
	usleep(300000);
	CHECK(!cn_drive_health_offline(h));
	cn_buf_fini(&b);
	close_wrapped(h, dir);
}

/* Starts n calls of a kind (SLOW_*) that each sleep delay_ms in the drive, then waits
 * wait_ms: long enough for them to be late and for the prober to have counted them. */
static void start_slow(cn_drive *h, fdrive *f, hung_arg *a, pthread_t *t, int n, int kind,
                       int delay_ms, int wait_ms)
{
	atomic_store(&f->delay_ms, delay_ms);
	for (int i = 0; i < n; i++) {
		a[i] = (hung_arg){ .h = h, .kind = kind };
		CN_ASSERT(pthread_create(&t[i], NULL, hung_call, &a[i]) == 0);
	}
	usleep((useconds_t)wait_ms * 1000);
	atomic_store(&f->delay_ms, 0);
}

static void join_slow(hung_arg *a, pthread_t *t, int n)
{
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_INT(a[i].e, CN_OK);
	}
}

/* HEALTH-8: while late_cap calls are late, new calls are refused at once (CN_ERR_OFFLINE, the
 * drive not reached and not taken offline); fewer late calls, late syncs, or late writes
 * of a drive whose writes sync, refuse nothing; when the late calls return, calls go through again. */
TEST(test_late_calls_refuse_new_ones)
{
	char dir[64];
	fdrive *f;
	cn_drive_health_cfg cfg = { .stall_ms = 5000, .probe_ms = 30, .late_ms = 100, .late_cap = 3 };
	cn_drive *h = open_wrapped_cfg(dir, "cn_health_late", &f, &cfg);
	CHECK_EQ_INT(h->ops->write_sys(h, "x", "abc", 3), CN_OK);
	cn_drive_info d0;
	CHECK_EQ_INT(h->ops->info(h, &d0), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	hung_arg a[3];
	pthread_t t[3];

	/* three late reads: the next call is refused without reaching the drive */
	start_slow(h, f, a, t, 3, SLOW_READ, 1200, 400);
	int calls = atomic_load(&f->calls);
	int64_t t1 = now_ms();
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_ERR_OFFLINE);
	CHECK_EQ_INT(h->ops->stat_vol(h, "nobucket", NULL), CN_ERR_OFFLINE);
	CHECK(now_ms() - t1 < 100);
	CHECK_EQ_INT(atomic_load(&f->calls), calls);
	CHECK(!cn_drive_health_offline(h));
	/* info answers the last figures without asking the drive (it could hang too); the
	 * refusals, info's included, are counted for the metrics */
	cn_drive_info di;
	CHECK_EQ_INT(h->ops->info(h, &di), CN_OK);
	CHECK(di.online && di.total == d0.total && di.refused == 3 && di.outages == 0);
	CHECK_EQ_INT(h->ops->reopen(h), CN_ERR_OFFLINE); /* nor does reopen */
	CHECK_EQ_INT(atomic_load(&f->calls), calls);
	join_slow(a, t, 3);
	usleep(100000); /* the prober's next look (every 25 ms) */
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_OK);

	/* two late reads (below the cap): calls go through */
	start_slow(h, f, a, t, 2, SLOW_READ, 800, 400);
	calls = atomic_load(&f->calls);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_OK);
	CHECK_EQ_INT(atomic_load(&f->calls), calls + 1);
	join_slow(a, t, 2);

	/* three late syncs (a group commit under load) refuse nothing */
	start_slow(h, f, a, t, 3, SLOW_SYNC, 800, 400);
	calls = atomic_load(&f->calls);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_OK);
	CHECK_EQ_INT(atomic_load(&f->calls), calls + 1);
	join_slow(a, t, 3);

	/* three late writes count, unless the drive's writes sync themselves (writes_sync,
	 * CAIRN_SYNC=fsync): then they are waits for the device, as syncs are */
	start_slow(h, f, a, t, 3, SLOW_WRITE, 1200, 400);
	calls = atomic_load(&f->calls);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_ERR_OFFLINE);
	CHECK_EQ_INT(atomic_load(&f->calls), calls);
	join_slow(a, t, 3);
	usleep(100000);
	f->base.writes_sync = true;
	start_slow(h, f, a, t, 3, SLOW_WRITE, 800, 400);
	calls = atomic_load(&f->calls);
	CHECK_EQ_INT(h->ops->read_sys(h, "x", 100, &b), CN_OK);
	CHECK_EQ_INT(atomic_load(&f->calls), calls + 1);
	join_slow(a, t, 3);
	CHECK(!cn_drive_health_offline(h));
	cn_buf_fini(&b);
	close_wrapped(h, dir);
}

int main(void)
{
	cn_log_min = CN_LOG_ERROR + 1;
	RUN(test_errors_and_stalls);
	RUN(test_hung_call_watchdog);
	RUN(test_late_calls_refuse_new_ones);
	RUN(test_refused);
	TEST_END();
}
