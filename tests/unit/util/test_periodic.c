/* Unit tests for cn_periodic (src/util/util.c): runs on its period, stops promptly, and
 * a run in progress sees the stop request. */
#include "util/util.h"
#include "test.h"

#include <unistd.h>

typedef struct counter {
	atomic_int runs;
	cn_periodic *p;
	atomic_bool saw_stop;
	int sleep_ms;
} counter;

static void tick(void *arg)
{
	counter *c = arg;
	atomic_fetch_add(&c->runs, 1);
	for (int i = 0; i < c->sleep_ms && !cn_periodic_stopping(c->p); i++)
		usleep(1000);
	if (cn_periodic_stopping(c->p))
		atomic_store(&c->saw_stop, true);
}

TEST(runs_every_period_until_stopped)
{
	cn_periodic p = { 0 };
	counter c = { .p = &p };
	CHECK_EQ_INT(cn_periodic_start(&p, 10, tick, &c), CN_OK);
	usleep(200 * 1000);
	cn_periodic_stop(&p);
	int n = atomic_load(&c.runs);
	CHECK(n >= 3 && n <= 21); /* every 10 ms for 200 ms, on a loaded machine */
	usleep(50 * 1000);
	CHECK_EQ_INT(atomic_load(&c.runs), n); /* nothing after stop */
	cn_periodic_stop(&p); /* twice: a no-op */
}

TEST(stop_is_prompt_and_visible_to_a_run)
{
	cn_periodic p = { 0 };
	counter c = { .p = &p, .sleep_ms = 5000 };
	CHECK_EQ_INT(cn_periodic_start(&p, 1, tick, &c), CN_OK);
	while (atomic_load(&c.runs) == 0)
		usleep(1000);
	int64_t t0 = cn_mono_ms();
	cn_periodic_stop(&p); /* the run polls cn_periodic_stopping and ends early */
	CHECK(cn_mono_ms() - t0 < 2000);
	CHECK(atomic_load(&c.saw_stop));
	/* a long period: stop wakes the waiting thread at once */
	cn_periodic q = { 0 };
	counter d = { .p = &q };
	CHECK_EQ_INT(cn_periodic_start(&q, 60 * 1000, tick, &d), CN_OK);
	t0 = cn_mono_ms();
	cn_periodic_stop(&q);
	CHECK(cn_mono_ms() - t0 < 2000);
	CHECK_EQ_INT(atomic_load(&d.runs), 0);
	cn_periodic never = { 0 };
	cn_periodic_stop(&never); /* never started: a no-op */
}

int main(void)
{
	RUN(runs_every_period_until_stopped);
	RUN(stop_is_prompt_and_visible_to_a_run);
	TEST_END();
}
