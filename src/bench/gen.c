/* bench/gen: what each request of a phase is — the operation, the object (by index: its key,
 * size and payload window follow from it, so a PUT and a later verifying GET agree), and
 * in an open loop when it starts. */
#include "bench/run_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

uint64_t cn_bench_rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t cn_bench_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Size and payload window of object idx (deterministic: PUT and verify agree). */
void cn_bench_obj_shape(const eng *g, uint64_t idx, uint64_t *size, uint64_t *off)
{
	uint64_t h = cn_bench_mix(idx + 0x9E3779B97F4A7C15ULL);
	*off = h % SLACK;
	if (g->cfg->mode == CN_BENCH_MULTIPART) {
		*size = g->cfg->part_size;
		return;
	}
	if (!g->cfg->randsize || g->cfg->obj_size <= 1) {
		*size = g->cfg->obj_size;
		return;
	}
	/* log-uniform in [1, obj_size], as warp's --obj.randsize */
	double u = (double)(cn_bench_mix(h) >> 11) / 9007199254740992.0;
	uint64_t s = (uint64_t)exp(u * log((double)g->cfg->obj_size));
	*size = s < 1 ? 1 : s > g->cfg->obj_size ? g->cfg->obj_size : s;
}

void cn_bench_obj_key(const eng *g, uint64_t idx, char *out, size_t cap)
{
	snprintf(out, cap, "%s%08" PRIx64 ".rnd", g->prefix, idx);
}

/* A random object owned by this worker in one of the wanted states (bounded probing). */
static bool pick_obj(worker *w, uint8_t want, uint64_t *out)
{
	eng *g = w->g;
	uint64_t per = g->nobj / (uint64_t)g->nthreads + 1;
	for (int tries = 0; tries < 32; tries++) {
		uint64_t i = (uint64_t)w->id + (uint64_t)g->nthreads * (cn_bench_rnd(&w->rng) % per);
		if (i < g->nobj && g->state[i] == want) {
			*out = i;
			return true;
		}
	}
	return false;
}

static int pick_mixed_op(worker *w)
{
	const cn_bench_cfg *c = w->g->cfg;
	double tot = c->get_distrib + c->put_distrib + c->stat_distrib + c->delete_distrib;
	double r = (double)(cn_bench_rnd(&w->rng) >> 11) / 9007199254740992.0 * tot;
	if ((r -= c->get_distrib) < 0)
		return CN_BOP_GET;
	if ((r -= c->stat_distrib) < 0)
		return CN_BOP_STAT;
	if ((r -= c->put_distrib) < 0)
		return CN_BOP_PUT;
	return CN_BOP_DELETE;
}

/* Chooses the next request for x; false when this worker has no more work in the phase. */
bool cn_bench_gen_next(worker *w, xfer *x)
{
	eng *g = w->g;
	phase *ph = g->ph;
	uint64_t i;
	x->obj = 0;
	switch (ph->gen) {
	case GEN_PUT_TABLE:
	case GEN_DELETE_TABLE:
		i = atomic_fetch_add(&ph->next, 1);
		if (i >= ph->count)
			return false;
		x->op = ph->gen == GEN_PUT_TABLE ? CN_BOP_PUT : CN_BOP_DELETE;
		x->obj = i;
		return true;
	case GEN_PUT_NEW:
		x->op = CN_BOP_PUT;
		x->obj = atomic_fetch_add(&g->put_new_next, 1);
		return true;
	case GEN_GET:
	case GEN_STAT: {
		uint64_t cnt = ph->count ? ph->count : g->nobj;
		if (!cnt)
			return false;
		x->op = ph->gen == GEN_GET ? CN_BOP_GET : CN_BOP_STAT;
		x->obj = cn_bench_rnd(&w->rng) % cnt;
		return true;
	}
	case GEN_LIST:
		x->op = CN_BOP_LIST;
		return true;
	case GEN_MIXED: {
		int op = pick_mixed_op(w);
		bool ok = false;
		if (op == CN_BOP_PUT)
			ok = pick_obj(w, OBJ_ABSENT, &i) || pick_obj(w, OBJ_PRESENT, &i);
		else if (!(ok = pick_obj(w, OBJ_PRESENT, &i)) && pick_obj(w, OBJ_ABSENT, &i)) {
			op = CN_BOP_PUT; /* everything of ours is deleted or busy: write instead */
			ok = true;
		}
		if (!ok)
			return false;
		x->op = op;
		x->obj = i;
		g->state[i] = OBJ_BUSY;
		return true;
	}
	case GEN_PUT_PARTS:
		i = atomic_fetch_add(&ph->next, 1);
		if (i >= ph->count)
			return false;
		x->op = CN_BOP_PUTPART;
		x->obj = i;
		return true;
	case GEN_GET_PARTS:
		x->op = CN_BOP_GET;
		x->obj = cn_bench_rnd(&w->rng) % ph->count;
		return true;
	}
	return false;
}

double cn_bench_exp_interval(worker *w, double rate)
{
	double u = ((double)(cn_bench_rnd(&w->rng) >> 11) + 1.0) / 9007199254740993.0;
	return -log(u) / rate * 1e9;
}
