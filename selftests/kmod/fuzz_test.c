// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest: an ioctl fuzzer of /dev/metadef, and cross-domain probes.
 *
 * Several worker processes (every other one unprivileged: uid/gid 65534),
 * each with several threads, hammer the device at once: valid commands
 * built from the handles, tokens, domain ids, device VAs and mmap offsets
 * the workers collected, the same mutated (bits, fields, flags, reserved
 * and pad words), unknown numbers, wrong directions, _IOC sizes 0..300,
 * and bad argument pointers (NULL, an inaccessible page, a kernel address,
 * a struct that runs into an inaccessible page, and a read-only page, so
 * that for an _IOWR command the copy-out fails after the copy-in worked).
 * Interleaved: mmap, touching and munmap of the handles' offsets (under a
 * SIGBUS/SIGSEGV handler), fork (the child does a few things and exits),
 * close and reopen of descriptors, descriptors passed to other workers
 * (SCM_RIGHTS: then two processes fuzz one domain), dma-buf export with
 * mmap and close.
 *
 * A syscall may fail with any errno, with three exceptions the uAPI
 * promises: ENOTTY for what is no command of ours, EBADF for a change
 * through a read-only descriptor, EINVAL for a nonzero reserved byte, pad
 * word, unknown flag or byte past the struct. What must not happen: the
 * kernel complaining (the VM runner fails the run), a leak (after every
 * worker has gone, the pool must be all free and debugfs "regions" and
 * "domains" empty), a hang (every loop has a deadline), the kernel
 * accepting an argument it could not have read or written back, another
 * errno where one is promised, or a cross-domain access working. For the
 * last, each worker keeps a canary: a region in a domain of its own that
 * never shares anything, filled with a pattern derived from its seed.
 * Every worker probes the others' (and its own) canaries from fresh
 * domains and from its fuzzed ones: their handles, mmap offsets and
 * device VAs (COPY from and to), tokens addressed to other domains,
 * SET_QUOTA without privileges, and through read-only and revoked
 * imports. Each refusal is counted; each success is a breach, and
 * so is a canary that changed or canary bytes showing up in a prober's
 * memory.
 *
 * Seed and size: METADEF_FUZZ_SEED (default: from the clock; printed),
 * METADEF_FUZZ_CALLS (a number of ioctl calls in all; default: run for
 * METADEF_FUZZ_SECONDS, default 15, and at least METADEF_FUZZ_MIN_CALLS,
 * default 5000), METADEF_FUZZ_PROCS (4), METADEF_FUZZ_THREADS (3); or
 * --seed, --calls, --seconds, --min-calls, --procs, --threads. A worker's
 * choices follow from the seed; the interleaving of threads and processes
 * does not, so a replay runs the same program, not the same schedule.
 *
 * Figures (TAP diagnostics): "# METADEF-FIGURE ioctls_fuzzed N",
 * "# METADEF-FIGURE cross_domain_refused N",
 * "# METADEF-FIGURE cross_domain_breaches N".
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/metadef.h>

#include "md_ioctl.h"
#include "md_touch.h"
#include "kselftest_harness.h"

#define DEV "/dev/metadef"
#define PAGE 4096

#define MAX_PROCS	16
#define MAX_THREADS	8
#define NSLOT		3	/* fuzzed descriptors (domains) per worker */
#define NREC		48	/* handles a worker remembers */
#define NMAP		12	/* live mappings a worker keeps */
#define NBUF		4	/* dma-bufs a worker keeps open */
#define NTOK		16	/* tokens a worker publishes */
#define CANARY_SIZE	(4 * PAGE)

/* ------------------------------------------------------------ config */

static struct {
	uint64_t seed;
	uint64_t max_calls;	/* stop at this many; 0: no count limit */
	uint64_t min_calls;	/* do not stop on time before this many */
	unsigned int seconds;	/* time budget */
	unsigned int limit;	/* hard limit: a run still going is hung */
	unsigned int procs, threads;
} cfg;

/* ------------------------------------------- what the processes share */

/*
 * A published token: seq is odd while the writer fills the entry in, so
 * a reader never pairs one grant's token with another's target.
 */
struct tok {
	uint32_t seq;
	uint32_t target;
	uint64_t token;
};

struct peer {
	uint32_t ready;
	uint32_t canary_dom;
	uint32_t canary_handle;
	uint32_t dom[NSLOT];	/* its fuzzed domains, as they are now */
	uint64_t canary_va, canary_off, canary_seed;
	struct tok tok[NTOK];
	uint32_t tok_next;
	uint32_t breach_said;
	/* figures */
	uint64_t calls, refused, breaches, oddities;
	uint64_t maps, touches, signals, forks, reopens, exports, probes;
	uint64_t passes;
	uint64_t enotty, ebadf, einval;	/* calls whose errno was checked */
	char breach[200];
	char oddity[200];
};

struct shared {
	uint64_t calls;		/* ioctls by every worker so far */
	uint32_t stop;
	uint32_t nready;
	uint32_t nstopped;	/* workers whose threads have all ended */
	struct peer p[MAX_PROCS];
};

static struct shared *sh;
/* socks[i]: worker i receives descriptors on [1]; the others send on [0]. */
static int socks[MAX_PROCS][2];

/* ------------------------------------------------- one worker process */

static int me;			/* index of this worker */
static struct peer *mine;
static int privileged;
static int canary_fd = -1;

/* What a slot's descriptor is: it decides which errnos are right. */
enum { SLOT_RW, SLOT_RO, SLOT_NONE /* /dev/null: the open failed */ };

struct slot {
	pthread_rwlock_t lock;	/* read: using fd; write: replacing it */
	int fd;
	int mode;
	uint32_t dom;
	uint32_t gen;
};
static struct slot slots[NSLOT];

struct rec {
	int used;
	int slot;
	uint32_t gen;
	uint32_t handle;
	int import;
	uint64_t off, va, size;
};

/* Local tokens (grants between our own domains), handles, dma-bufs. */
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec recs[NREC];
static int bufs[NBUF] = { -1, -1, -1, -1 };

struct map {
	unsigned char *p;
	size_t len;
	int prot;
};
static pthread_rwlock_t map_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct map maps[NMAP];

struct th {
	uint64_t rng;
	int id;
	uint64_t calls;		/* not yet added to the shared count */
	unsigned char *rw;	/* a page, */
	unsigned char *ro;	/* the same page read-only, */
	unsigned char *edge;	/* a page followed by an inaccessible one */
};

static uint64_t rnd(struct th *t)
{
	return md_rand(&t->rng);
}

static unsigned int rn(struct th *t, unsigned int n)
{
	return n ? (unsigned int)(rnd(t) % n) : 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int stopping(void)
{
	return __atomic_load_n(&sh->stop, __ATOMIC_RELAXED);
}

static void add(uint64_t *v, uint64_t n)
{
	__atomic_add_fetch(v, n, __ATOMIC_RELAXED);
}

static void flush_calls(struct th *t)
{
	uint64_t total;

	if (!t->calls)
		return;
	add(&mine->calls, t->calls);
	total = __atomic_add_fetch(&sh->calls, t->calls, __ATOMIC_RELAXED);
	t->calls = 0;
	if (cfg.max_calls && total >= cfg.max_calls)
		__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
}

/* Every ioctl of the fuzzer goes through here: it is what is counted. */
static int fz_ioctl(struct th *t, int fd, unsigned long cmd, void *arg)
{
	t->calls++;
	if (t->calls >= 64)
		flush_calls(t);
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* A cross-domain attempt: refused is good, anything else a breach. */
static void probe(int refused, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void probe(int refused, const char *fmt, ...)
{
	va_list ap;

	if (refused) {
		add(&mine->refused, 1);
		return;
	}
	add(&mine->breaches, 1);
	if (__atomic_exchange_n(&mine->breach_said, 1, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(mine->breach, sizeof(mine->breach), fmt, ap);
	va_end(ap);
}

/* Something the kernel must never do that is not about domains. */
static void oddity(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void oddity(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_add_fetch(&mine->oddities, 1, __ATOMIC_RELAXED) != 1)
		return;
	va_start(ap, fmt);
	vsnprintf(mine->oddity, sizeof(mine->oddity), fmt, ap);
	va_end(ap);
}

/* -------------------------------------------- touching memory safely */

/* catch_faults() and touch(): md_touch.h */

/* ---------------------------------------------------------- canaries */

static uint64_t canary_word(uint64_t seed, size_t i)
{
	uint64_t s = seed ^ (i * 0x2545f4914f6cdd1dULL);

	return md_rand(&s) | 1;	/* never zero: freed memory is */
}

/* Does @p (@len bytes) hold any word of any worker's canary? */
static int holds_canary(const unsigned char *p, size_t len, int *who)
{
	const uint64_t *w = (const uint64_t *)p;

	for (size_t i = 0; i < len / 8; i++) {
		if (!w[i])
			continue;
		for (unsigned int q = 0; q < cfg.procs; q++) {
			struct peer *pq = &sh->p[q];

			if (!__atomic_load_n(&pq->ready, __ATOMIC_ACQUIRE))
				continue;
			for (size_t j = 0; j < CANARY_SIZE / 8; j++)
				if (w[i] == canary_word(pq->canary_seed, j)) {
					*who = q;
					return 1;
				}
		}
	}
	return 0;
}

/* Our canary, read through our own mapping of it: 0 if intact. */
static int canary_changed(void)
{
	const uint64_t *w;
	int bad = 0;

	w = mmap(NULL, CANARY_SIZE, PROT_READ, MAP_SHARED, canary_fd,
		 mine->canary_off);
	if (w == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < CANARY_SIZE / 8; i++)
		if (w[i] != canary_word(mine->canary_seed, i))
			bad++;
	munmap((void *)w, CANARY_SIZE);
	return bad;
}

static int make_canary(uint64_t seed)
{
	struct metadef_alloc a;
	uint64_t *w;

	canary_fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (canary_fd < 0 || alloc(canary_fd, CANARY_SIZE, &a))
		return -1;
	w = mmap(NULL, CANARY_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 canary_fd, a.mmap_offset);
	if (w == MAP_FAILED)
		return -1;
	mine->canary_seed = seed;
	for (size_t i = 0; i < CANARY_SIZE / 8; i++)
		w[i] = canary_word(seed, i);
	munmap(w, CANARY_SIZE);
	mine->canary_dom = domain_of(canary_fd);
	mine->canary_handle = a.handle;
	mine->canary_va = a.dev_va;
	mine->canary_off = a.mmap_offset;
	return 0;
}

/* ---------------------------------------------------------- the tables */

static void rec_add(int slot, uint32_t gen, uint32_t handle, int import,
		    uint64_t off, uint64_t va, uint64_t size)
{
	pthread_mutex_lock(&tab_lock);
	for (int i = 0; i < NREC; i++)
		if (!recs[i].used) {
			recs[i] = (struct rec){ 1, slot, gen, handle, import,
						off, va, size };
			break;
		}
	pthread_mutex_unlock(&tab_lock);
}

static void rec_drop(int slot, uint32_t handle)
{
	pthread_mutex_lock(&tab_lock);
	for (int i = 0; i < NREC; i++)
		if (recs[i].used && recs[i].slot == slot &&
		    recs[i].handle == handle)
			recs[i].used = 0;
	pthread_mutex_unlock(&tab_lock);
}

static int rec_count(void)
{
	int n = 0;

	pthread_mutex_lock(&tab_lock);
	for (int i = 0; i < NREC; i++)
		n += recs[i].used;
	pthread_mutex_unlock(&tab_lock);
	return n;
}

/*
 * A random remembered handle of @slot (any slot if @slot < 0), as it is
 * now; 0 when there is none. @owned: only regions, not imports.
 */
static int rec_pick(struct th *t, int slot, int owned, struct rec *out)
{
	int start = rn(t, NREC);

	pthread_mutex_lock(&tab_lock);
	for (int k = 0; k < NREC; k++) {
		struct rec *r = &recs[(start + k) % NREC];

		if (!r->used || (slot >= 0 && r->slot != slot) ||
		    (owned && r->import))
			continue;
		if (r->gen != slots[r->slot].gen) {	/* its domain closed */
			r->used = 0;
			continue;
		}
		*out = *r;
		pthread_mutex_unlock(&tab_lock);
		return 1;
	}
	pthread_mutex_unlock(&tab_lock);
	return 0;
}

static void publish_token(uint64_t token, uint32_t target)
{
	uint32_t i = __atomic_fetch_add(&mine->tok_next, 1,
					__ATOMIC_RELAXED) % NTOK;
	struct tok *e = &mine->tok[i];

	__atomic_add_fetch(&e->seq, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&e->token, token, __ATOMIC_RELAXED);
	__atomic_store_n(&e->target, target, __ATOMIC_RELAXED);
	__atomic_add_fetch(&e->seq, 1, __ATOMIC_ACQ_REL);
}

/* A published token of worker @q and the domain it names; 0 if none. */
static int read_token(struct th *t, int q, uint64_t *token, uint32_t *target)
{
	struct tok *e = &sh->p[q].tok[rn(t, NTOK)];
	uint32_t s1, s2;

	s1 = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	*token = __atomic_load_n(&e->token, __ATOMIC_RELAXED);
	*target = __atomic_load_n(&e->target, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
	return s1 == s2 && !(s1 & 1) && *token;
}

/* A worker other than us (or us when alone) that is up. */
static int pick_peer(struct th *t, int others)
{
	for (int k = 0; k < 8; k++) {
		int q = rn(t, cfg.procs);

		if (others && q == me && cfg.procs > 1)
			continue;
		if (__atomic_load_n(&sh->p[q].ready, __ATOMIC_ACQUIRE))
			return q;
	}
	return me;
}

/* Some domain id: ours, a peer's, a canary, or nonsense. */
static uint32_t pick_domain(struct th *t)
{
	struct peer *pq = &sh->p[pick_peer(t, 0)];

	switch (rn(t, 8)) {
	case 0:
		return 0;
	case 1:
		return pq->canary_dom;
	case 2:
		return (uint32_t)rnd(t);
	case 3:
		return __atomic_load_n(&pq->dom[rn(t, NSLOT)],
				       __ATOMIC_RELAXED) + 1;
	default:
		return __atomic_load_n(&pq->dom[rn(t, NSLOT)],
				       __ATOMIC_RELAXED);
	}
}

static void slot_get(int s)
{
	pthread_rwlock_rdlock(&slots[s].lock);
}

static void slot_put(int s)
{
	pthread_rwlock_unlock(&slots[s].lock);
}

static void keep_buf(int fd)
{
	int old = -1;

	pthread_mutex_lock(&tab_lock);
	for (int i = 0; i < NBUF; i++)
		if (bufs[i] < 0) {
			bufs[i] = fd;
			fd = -1;
			break;
		}
	if (fd >= 0) {		/* full: the new one replaces the first */
		old = bufs[0];
		bufs[0] = fd;
	}
	pthread_mutex_unlock(&tab_lock);
	if (old >= 0)
		close(old);
}

static int take_buf(struct th *t)
{
	int i = rn(t, NBUF), fd;

	pthread_mutex_lock(&tab_lock);
	fd = bufs[i];
	bufs[i] = -1;
	pthread_mutex_unlock(&tab_lock);
	return fd;
}

/* ------------------------------------------------ the fuzzed commands */

struct cmd_desc {
	unsigned long cmd;
	const char *name;
	size_t size;
	size_t min;		/* the first version's size (older callers) */
	size_t flags_off;	/* the __u32 flags word */
	size_t resv_off;	/* reserved: from here ... */
	size_t resv_end;	/* ... to here */
	size_t pad_off;		/* a __u32 pad word, or 0 */
	uint32_t flags;		/* the flag bits it knows */
};

#define RESV_END(type) \
	(offsetof(type, reserved) + sizeof(((type *)0)->reserved))
#define DESC_V(c, type, min, flags, pad, known) { c, #c, sizeof(type), min, \
	flags, offsetof(type, reserved), RESV_END(type), pad, known }
#define DESC(c, type, flags, pad, known) \
	DESC_V(c, type, sizeof(type), flags, pad, known)

enum { C_INFO, C_ALLOC, C_FREE, C_QUOTA, C_COPY, C_GRANT, C_IMPORT,
	C_REVOKE, C_EXPORT, NCMD };

static const struct cmd_desc cmds[NCMD] = {
	DESC(METADEF_IOC_INFO, struct metadef_info,
	     offsetof(struct metadef_info, flags), 0, 0),
	/* ALLOC grew range_start/range_end past reserved: 72 bytes serve. */
	DESC_V(METADEF_IOC_ALLOC, struct metadef_alloc, METADEF_ALLOC_SIZE_VER0,
	       offsetof(struct metadef_alloc, flags), 0, METADEF_ALLOC_FLAGS),
	DESC(METADEF_IOC_FREE, struct metadef_free,
	     offsetof(struct metadef_free, flags), 0, 0),
	DESC(METADEF_IOC_SET_QUOTA, struct metadef_quota,
	     offsetof(struct metadef_quota, flags), 0, 0),
	DESC(METADEF_IOC_COPY, struct metadef_copy,
	     offsetof(struct metadef_copy, flags),
	     offsetof(struct metadef_copy, pad), 0),
	DESC(METADEF_IOC_GRANT, struct metadef_grant,
	     offsetof(struct metadef_grant, flags),
	     offsetof(struct metadef_grant, pad), METADEF_SHARE_FLAGS),
	DESC(METADEF_IOC_IMPORT, struct metadef_import,
	     offsetof(struct metadef_import, flags), 0, 0),
	DESC(METADEF_IOC_REVOKE, struct metadef_revoke,
	     offsetof(struct metadef_revoke, flags),
	     offsetof(struct metadef_revoke, pad), 0),
	DESC(METADEF_IOC_EXPORT_DMABUF, struct metadef_export,
	     offsetof(struct metadef_export, flags),
	     offsetof(struct metadef_export, pad), METADEF_EXPORT_FLAGS),
};

/* The dispatcher's argument buffer (kmod/ioctl.c): larger is ENOTTY. */
#define MAX_ARG 256

/*
 * The command @cmd names, as the uAPI defines them: type, number and
 * direction of one of ours, at least its size and at most MAX_ARG.
 * Anything else must fail with ENOTTY. Returns its index or -1.
 */
static int cmd_index(unsigned long cmd)
{
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != METADEF_IOC_MAGIC || nr >= NCMD ||
	    _IOC_DIR(cmd) != _IOC_DIR(cmds[nr].cmd) ||
	    _IOC_SIZE(cmd) < cmds[nr].min || _IOC_SIZE(cmd) > MAX_ARG)
		return -1;
	return nr;
}

static uint32_t get32(const unsigned char *buf, size_t off)
{
	uint32_t v;

	memcpy(&v, buf + off, 4);
	return v;
}

/*
 * Is the argument @in (@usize bytes, as passed) one the uAPI says fails
 * with EINVAL whatever else is in it? A reserved byte, the pad word, an
 * unknown flag or a byte past the struct that is not zero; and a few
 * documented field rules (ALLOC: size > 0, align a power of two, a
 * range page-aligned and not empty with METADEF_ALLOC_RANGE, none
 * without; COPY: size > 0; GRANT: READ). An older caller's shorter struct
 * reads as zeroes past its end, as the kernel sees it.
 */
static const char *malformed(int c, const unsigned char *arg, size_t usize)
{
	const struct cmd_desc *d = &cmds[c];
	unsigned char in[MAX_ARG];
	uint64_t v, w;

	memset(in, 0, sizeof(in));
	memcpy(in, arg, usize < d->size ? usize : d->size);
	for (size_t i = d->resv_off; i < d->resv_end; i++)
		if (in[i])
			return "a reserved byte";
	for (size_t i = d->size; i < usize; i++)
		if (arg[i])
			return "a byte past the struct";
	if (d->pad_off && get32(in, d->pad_off))
		return "the pad word";
	if (get32(in, d->flags_off) & ~d->flags)
		return "an unknown flag";
	switch (c) {
	case C_ALLOC:
		memcpy(&v, in + offsetof(struct metadef_alloc, size), 8);
		memcpy(&w, in + offsetof(struct metadef_alloc, align), 8);
		if (!v)
			return "size 0";
		if (w & (w - 1))
			return "an align that is no power of two";
		memcpy(&v, in + offsetof(struct metadef_alloc, range_start), 8);
		memcpy(&w, in + offsetof(struct metadef_alloc, range_end), 8);
		if (!(get32(in, d->flags_off) & METADEF_ALLOC_RANGE)) {
			if (v || w)
				return "a range without METADEF_ALLOC_RANGE";
		} else if ((v | w) & (PAGE - 1) || v >= w) {
			return "a range not page-aligned or empty";
		}
		break;
	case C_COPY:
		memcpy(&v, in + offsetof(struct metadef_copy, size), 8);
		if (!v)
			return "size 0";
		break;
	case C_GRANT:
		if (!(get32(in, d->flags_off) & METADEF_SHARE_READ))
			return "no READ";
		break;
	}
	return NULL;
}


static uint64_t rand_size(struct th *t)
{
	switch (rn(t, 16)) {
	case 0:
		return 0;
	case 1:
		return 1 + rn(t, PAGE);
	case 2:
		return ~0ULL - rn(t, 2 * PAGE);
	case 3:
		return 64ULL << 20;
	case 4:
		return (uint64_t)(1 + rn(t, 64)) << 16;
	case 5:
		return 1ULL << (12 + rn(t, 40));
	default:
		return (uint64_t)(1 + rn(t, 16)) * PAGE;
	}
}

static uint64_t interesting(struct th *t)
{
	static const uint64_t v[] = {
		0, 1, 2, 0x7f, 0x80, 0xff, PAGE - 1, PAGE, PAGE + 1,
		0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ULL,
		1ULL << 40, (1ULL << 40) - 1, 1ULL << 63, ~0ULL, ~0ULL - 1,
	};

	if (rn(t, 4) == 0)
		return rnd(t);
	return v[rn(t, sizeof(v) / sizeof(v[0]))];
}

/* Some device VA: one of ours (inside, at the edge, beyond) or nonsense. */
static uint64_t pick_va(struct th *t, int slot, uint64_t *room)
{
	struct rec r;

	*room = PAGE;
	if (rn(t, 8) && rec_pick(t, rn(t, 4) ? slot : -1, 0, &r)) {
		uint64_t in = r.size ? rnd(t) % r.size : 0;

		switch (rn(t, 6)) {
		case 0:
			*room = r.size;
			return r.va;
		case 1:
			*room = PAGE;
			return r.va + r.size - PAGE;
		case 2:
			*room = 2 * PAGE;
			return r.va + r.size - PAGE;	/* runs over the end */
		default:
			*room = r.size - in;
			return r.va + in;
		}
	}
	return rn(t, 2) ? (1ULL << 40) + rnd(t) % (64ULL << 20) : rnd(t);
}

/*
 * A valid argument for command @c on @slot, from what we know: sometimes
 * it will simply work, which is what gets the fuzzer its handles.
 */
static void build(struct th *t, int c, int slot, void *buf)
{
	struct rec r;
	uint64_t room1, room2, token;
	uint32_t target;

	memset(buf, 0, cmds[c].size);
	switch (c) {
	case C_INFO:
		break;
	case C_ALLOC: {
		struct metadef_alloc *a = buf;

		a->size = rand_size(t);
		if (!rn(t, 4))
			a->align = 1ULL << (12 + rn(t, 12));
		if (!rn(t, 4))
			a->flags = METADEF_ALLOC_TOPDOWN;
		break;
	}
	case C_FREE: {
		struct metadef_free *f = buf;

		f->handle = rec_pick(t, slot, 0, &r) ? r.handle : rn(t, 64);
		break;
	}
	case C_QUOTA: {
		struct metadef_quota *q = buf;

		q->domain_id = pick_domain(t);
		q->quota = rn(t, 2) ? METADEF_QUOTA_UNLIMITED :
			   (uint64_t)rn(t, 4096) * PAGE;
		break;
	}
	case C_COPY: {
		struct metadef_copy *cp = buf;

		cp->src_va = pick_va(t, slot, &room1);
		cp->dst_va = pick_va(t, slot, &room2);
		room1 = room1 < room2 ? room1 : room2;
		cp->size = 1 + rnd(t) % (room1 ? room1 : PAGE);
		if (cp->size > (1 << 20) && rn(t, 4))
			cp->size = 1 + rn(t, 1 << 20);
		break;
	}
	case C_GRANT: {
		struct metadef_grant *g = buf;

		g->handle = rec_pick(t, slot, rn(t, 8) != 0, &r) ? r.handle :
			    rn(t, 64);
		g->domain_id = pick_domain(t);
		g->flags = METADEF_SHARE_READ |
			   (rn(t, 2) ? METADEF_SHARE_WRITE : 0);
		break;
	}
	case C_IMPORT: {
		struct metadef_import *im = buf;

		/* A token for us if there is one, else any. */
		im->token = rnd(t);
		for (int k = 0; k < 8; k++) {
			int q = pick_peer(t, 0);

			if (!read_token(t, q, &token, &target))
				continue;
			im->token = token;
			if (target == slots[slot].dom)
				break;
		}
		break;
	}
	case C_REVOKE: {
		struct metadef_revoke *rv = buf;

		rv->handle = rec_pick(t, slot, rn(t, 8) != 0, &r) ? r.handle :
			     rn(t, 64);
		rv->domain_id = rn(t, 2) ? 0 : pick_domain(t);
		break;
	}
	case C_EXPORT: {
		struct metadef_export *e = buf;

		e->handle = rec_pick(t, slot, rn(t, 8) != 0, &r) ? r.handle :
			    rn(t, 64);
		e->flags = rn(t, 4) & METADEF_EXPORT_FLAGS;
		e->fd = rn(t, 2) ? 0 : (int32_t)rnd(t);
		break;
	}
	}
}

static void put32(void *buf, size_t off, uint32_t v)
{
	memcpy((char *)buf + off, &v, 4);
}

static void put64(void *buf, size_t off, uint64_t v)
{
	memcpy((char *)buf + off, &v, 8);
}

/* Spoil @buf (a struct of command @c, in a buffer of @room bytes). */
static void mutate(struct th *t, int c, unsigned char *buf, size_t room)
{
	const struct cmd_desc *d = &cmds[c];
	int n = 1 + rn(t, 3);

	while (n--) {
		switch (rn(t, 7)) {
		case 0:		/* a bit */
			buf[rn(t, d->size)] ^= 1u << rn(t, 8);
			break;
		case 1:		/* a byte */
			buf[rn(t, d->size)] = (unsigned char)rnd(t);
			break;
		case 2:		/* a 32-bit field */
			put32(buf, 4 * rn(t, d->size / 4), interesting(t));
			break;
		case 3:		/* a 64-bit field */
			put64(buf, 8 * rn(t, d->size / 8), interesting(t));
			break;
		case 4:		/* reserved */
			buf[d->resv_off + rn(t, d->resv_end - d->resv_off)] |=
				1u << rn(t, 8);
			break;
		case 5:		/* flags or pad */
			if (d->pad_off && rn(t, 2))
				put32(buf, d->pad_off, 1u << rn(t, 32));
			else
				put32(buf, d->flags_off, rn(t, 2) ?
				      1u << rn(t, 32) : (uint32_t)rnd(t));
			break;
		case 6:		/* bytes past the struct (a "newer" caller) */
			if (room > d->size)
				buf[d->size + rn(t, room - d->size)] =
					(unsigned char)rnd(t);
			break;
		}
	}
}

/* Where the argument goes. */
enum { P_OK, P_MISALIGNED, P_RO, P_NULL, P_NONE, P_KERNEL, P_EDGE };

/* Record what a successful call gave us, read from @out. */
static void harvest(struct th *t, int c, int slot, uint32_t gen,
		    const unsigned char *out)
{
	switch (c) {
	case C_ALLOC: {
		struct metadef_alloc a;

		memcpy(&a, out, sizeof(a));
		rec_add(slot, gen, a.handle, 0, a.mmap_offset, a.dev_va,
			a.alloc_size);
		break;
	}
	case C_IMPORT: {
		struct metadef_import im;

		memcpy(&im, out, sizeof(im));
		rec_add(slot, gen, im.handle, 1, im.mmap_offset, im.dev_va,
			im.size);
		break;
	}
	case C_FREE: {
		struct metadef_free f;

		memcpy(&f, out, sizeof(f));
		rec_drop(slot, f.handle);
		break;
	}
	case C_GRANT: {
		struct metadef_grant g;

		memcpy(&g, out, sizeof(g));
		publish_token(g.token, g.domain_id);
		break;
	}
	case C_EXPORT: {
		struct metadef_export e;

		memcpy(&e, out, sizeof(e));
		if (e.fd >= 0)
			keep_buf(e.fd);
		break;
	}
	}
	(void)t;
}

/* One fuzzed ioctl on one of our descriptors. */
static void op_ioctl(struct th *t)
{
	int s = rn(t, NSLOT), c = rn(t, NCMD), where = P_OK, known = 1;
	unsigned long cmd = cmds[c].cmd;
	unsigned int size = cmds[c].size, dir = _IOC_DIR(cmd);
	unsigned char *arg, in[MAX_ARG + 64];
	const char *bad = NULL;
	int ret, fd, mode, idx;
	uint32_t gen;

	/* Keep the table from filling up with handles nobody frees. */
	if (c == C_ALLOC && rec_count() > NREC - 8)
		c = C_FREE, cmd = cmds[c].cmd, size = cmds[c].size,
		dir = _IOC_DIR(cmd);

	slot_get(s);
	fd = slots[s].fd;
	gen = slots[s].gen;
	mode = slots[s].mode;
	build(t, c, s, t->rw);
	if (rn(t, 2)) {
		memset(t->rw + size, 0, 512 - size);
		mutate(t, c, t->rw, 512);
	}
	switch (rn(t, 20)) {
	case 0: case 1:		/* another size, 0..300 */
		size = rn(t, 301);
		cmd = _IOC(dir, METADEF_IOC_MAGIC, _IOC_NR(cmd), size);
		break;
	case 2:			/* another direction */
		dir = (dir + 1 + rn(t, 3)) & 3;
		cmd = _IOC(dir, METADEF_IOC_MAGIC, _IOC_NR(cmd), size);
		break;
	case 3:			/* a number nobody knows */
		cmd = _IOC(rn(t, 4), METADEF_IOC_MAGIC, NCMD + rn(t, 247),
			   rn(t, 301));
		known = 0;
		break;
	case 4:			/* someone else's magic */
		cmd = _IOC(dir, rn(t, 256), _IOC_NR(cmd), size);
		known = _IOC_TYPE(cmd) == METADEF_IOC_MAGIC;
		break;
	}
	switch (rn(t, 24)) {
	case 0: case 1:
		where = P_RO;
		break;
	case 2:
		where = P_NULL;
		break;
	case 3:
		where = P_NONE;
		break;
	case 4:
		where = P_KERNEL;
		break;
	case 5:
		where = P_EDGE;
		break;
	case 6:
		where = P_MISALIGNED;
		break;
	}
	switch (where) {
	case P_MISALIGNED:
		arg = t->rw + 512 + 1 + rn(t, 7);
		memcpy(arg, t->rw, 512);
		break;
	case P_RO:
		arg = t->ro;
		break;
	case P_NULL:
		arg = NULL;
		break;
	case P_NONE:
		arg = t->edge + PAGE;
		break;
	case P_KERNEL:
		arg = (unsigned char *)(0xffff888000000000ULL +
					rnd(t) % (1ULL << 30));
		break;
	case P_EDGE:	/* starts readable, runs into the guard page */
		arg = t->edge + PAGE - rn(t, size ? size : 1);
		memcpy(arg, t->rw, t->edge + PAGE - arg);
		break;
	default:
		arg = t->rw;
	}
	/* What the kernel will read, when it can read it all. */
	idx = cmd_index(cmd);
	if (idx >= 0 && (where == P_OK || where == P_MISALIGNED ||
			 where == P_RO)) {
		memcpy(in, where == P_MISALIGNED ? arg : t->rw,
		       _IOC_SIZE(cmd));
		bad = malformed(idx, in, _IOC_SIZE(cmd));
	}
	ret = fz_ioctl(t, fd, cmd, arg);
	slot_put(s);

	/* The errnos the uAPI promises, whatever else is going on. */
	if (mode != SLOT_NONE && _IOC_TYPE(cmd) == METADEF_IOC_MAGIC &&
	    idx < 0) {
		add(&mine->enotty, 1);
		if (ret != -ENOTTY)
			oddity("%#lx, no command of ours, returned %d, not -ENOTTY",
			       cmd, ret);
	} else if (mode == SLOT_RO && idx > C_INFO) {
		add(&mine->ebadf, 1);
		if (ret != -EBADF)
			oddity("%s (%#lx) on a read-only descriptor returned %d, not -EBADF",
			       cmds[idx].name, cmd, ret);
	} else if (bad && (mode == SLOT_RW || idx == C_INFO)) {
		add(&mine->einval, 1);
		if (ret != -EINVAL)
			oddity("%s (%#lx) with %s returned %d, not -EINVAL",
			       cmds[idx].name, cmd, bad, ret);
	}
	if (ret)
		return;

	if (!known)
		oddity("unknown command %#lx succeeded", cmd);
	if (where == P_NULL || where == P_NONE || where == P_KERNEL ||
	    (where == P_EDGE && size > 0)) {
		oddity("%s (%#lx) succeeded on an inaccessible argument %p",
		       cmds[c].name, cmd, (void *)arg);
		return;
	}
	if (where == P_RO) {
		if (_IOC_DIR(cmd) & _IOC_READ)
			oddity("%s (%#lx) succeeded on a read-only argument",
			       cmds[c].name, cmd);
		return;
	}
	if (_IOC_NR(cmd) == _IOC_NR(cmds[c].cmd) &&
	    _IOC_TYPE(cmd) == METADEF_IOC_MAGIC &&
	    _IOC_DIR(cmd) == _IOC_DIR(cmds[c].cmd))
		harvest(t, c, s, gen, arg);
}

/* ---------------------------------------------------- the other ops */

static void map_add(unsigned char *p, size_t len, int prot)
{
	struct map old = { NULL, 0, 0 };
	int i;

	pthread_rwlock_wrlock(&map_lock);
	for (i = 0; i < NMAP; i++)
		if (!maps[i].p)
			break;
	if (i == NMAP) {
		old = maps[0];
		i = 0;
	}
	maps[i] = (struct map){ p, len, prot };
	pthread_rwlock_unlock(&map_lock);
	if (old.p)
		munmap(old.p, old.len);
}

static void op_mmap(struct th *t)
{
	int s = rn(t, NSLOT), prot, flags = MAP_SHARED;
	size_t first, pages;
	struct rec r;
	void *p;

	if (!rec_pick(t, rn(t, 4) ? s : -1, 0, &r))
		return;
	s = r.slot;
	pages = r.size / PAGE;
	if (!pages)
		return;
	first = rn(t, 3) ? 0 : rn(t, pages);
	pages = rn(t, 2) ? pages - first : 1 + rn(t, pages - first);
	if (!rn(t, 16))
		pages++;		/* beyond the end */
	if (pages > 4096)
		pages = 4096;
	prot = rn(t, 2) ? PROT_READ : PROT_READ | PROT_WRITE;
	if (!rn(t, 16))
		flags = MAP_PRIVATE;
	slot_get(s);
	p = mmap(NULL, pages * PAGE, prot, flags, slots[s].fd,
		 r.off + first * PAGE);
	slot_put(s);
	if (p == MAP_FAILED)
		return;
	add(&mine->maps, 1);
	if (flags == MAP_PRIVATE)
		oddity("a private mapping of a region was allowed");
	map_add(p, pages * PAGE, prot);
}

static void op_touch(struct th *t)
{
	unsigned char v;
	int i = rn(t, NMAP), n = 1 + rn(t, 8);

	pthread_rwlock_rdlock(&map_lock);
	if (maps[i].p) {
		while (n--) {
			size_t at = rnd(t) % maps[i].len;
			int w = (maps[i].prot & PROT_WRITE) && rn(t, 2);

			add(&mine->touches, 1);
			if (touch(maps[i].p + at, w, (unsigned char)rnd(t), &v))
				add(&mine->signals, 1);
		}
		/* Split the VMA now and then (->open on the new half). */
		if (!rn(t, 16) && maps[i].len > PAGE)
			mprotect(maps[i].p + PAGE, PAGE, PROT_READ);
	}
	pthread_rwlock_unlock(&map_lock);
}

static void op_munmap(struct th *t)
{
	int i = rn(t, NMAP);
	struct map m;

	pthread_rwlock_wrlock(&map_lock);
	m = maps[i];
	maps[i].p = NULL;
	pthread_rwlock_unlock(&map_lock);
	if (m.p)
		munmap(m.p, m.len);
}

/* Put @fd in slot @s (write-locked), closing what was there. */
static void slot_replace(int s, int fd, int mode)
{
	close(slots[s].fd);
	pthread_mutex_lock(&tab_lock);
	slots[s].fd = fd;
	slots[s].mode = mode;
	slots[s].gen++;
	slots[s].dom = domain_of(fd);
	pthread_mutex_unlock(&tab_lock);
	__atomic_store_n(&mine->dom[s], slots[s].dom, __ATOMIC_RELAXED);
}

/* Close one descriptor and open another in its place (a new domain). */
static void op_reopen(struct th *t)
{
	int s = rn(t, NSLOT);
	int fd, mode;

	pthread_rwlock_wrlock(&slots[s].lock);
	/* Now and then read-only: it may only ask. */
	mode = rn(t, 8) ? SLOT_RW : SLOT_RO;
	fd = open(DEV, (mode == SLOT_RW ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0) {	/* e.g. EMFILE: keep a valid descriptor anyway */
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		mode = SLOT_NONE;
	}
	slot_replace(s, fd, mode);
	pthread_rwlock_unlock(&slots[s].lock);
	add(&mine->reopens, 1);
}

/*
 * Pass one of our descriptors to another worker (SCM_RIGHTS over its
 * datagram socket), or take one that was passed to us in place of one
 * of ours: from then on both workers fuzz the same domain.
 */
static void op_pass(struct th *t)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte = 0;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int s = rn(t, NSLOT), fd = -1, mode, fl;

	memset(cbuf, 0, sizeof(cbuf));
	if (rn(t, 2)) {
		int q = pick_peer(t, 1);

		if (q == me)
			return;
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		slot_get(s);
		memcpy(CMSG_DATA(cm), &slots[s].fd, sizeof(int));
		if (sendmsg(socks[q][0], &mh, MSG_DONTWAIT) == 1)
			add(&mine->passes, 1);
		slot_put(s);
		return;
	}
	if (recvmsg(socks[me][1], &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
		return;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (fd < 0)
		return;
	fl = fcntl(fd, F_GETFL);
	if (!domain_of(fd))
		mode = SLOT_NONE;	/* someone's /dev/null stand-in */
	else
		mode = (fl & O_ACCMODE) == O_RDONLY ? SLOT_RO : SLOT_RW;
	pthread_rwlock_wrlock(&slots[s].lock);
	slot_replace(s, fd, mode);
	pthread_rwlock_unlock(&slots[s].lock);
}

static void op_export(struct th *t)
{
	struct metadef_export e;
	struct dma_buf_sync sync;
	unsigned char *p, v;
	struct rec r;
	int s, ret, buf;

	if (rn(t, 3) == 0) {	/* one we kept: use it, maybe close it */
		buf = take_buf(t);
		if (buf < 0)
			return;
		memset(t->rw, 0, 64);
		/* A metadef command on a dma-buf is not its business. */
		if (!fz_ioctl(t, buf, cmds[rn(t, NCMD)].cmd, t->rw))
			oddity("a metadef ioctl on a dma-buf succeeded");
		if (rn(t, 2))
			keep_buf(buf);
		else
			close(buf);
		return;
	}
	if (!rec_pick(t, -1, 1, &r))
		return;
	s = r.slot;
	memset(&e, 0, sizeof(e));
	e.handle = r.handle;
	e.flags = rn(t, 4) & METADEF_EXPORT_FLAGS;
	slot_get(s);
	ret = fz_ioctl(t, slots[s].fd, METADEF_IOC_EXPORT_DMABUF, &e);
	slot_put(s);
	if (ret)
		return;
	add(&mine->exports, 1);
	buf = e.fd;
	p = mmap(NULL, PAGE, PROT_READ | ((e.flags & METADEF_EXPORT_RDWR) ?
					   PROT_WRITE : 0),
		 MAP_SHARED, buf, rn(t, 2) ? 0 : PAGE * rn(t, 4));
	if (p != MAP_FAILED) {
		memset(&sync, 0, sizeof(sync));
		sync.flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW;
		fz_ioctl(t, buf, DMA_BUF_IOCTL_SYNC, &sync);
		if (touch(p + rn(t, PAGE), (e.flags & METADEF_EXPORT_RDWR) &&
			  rn(t, 2), (unsigned char)rnd(t), &v))
			add(&mine->signals, 1);
		sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW;
		fz_ioctl(t, buf, DMA_BUF_IOCTL_SYNC, &sync);
		if (rn(t, 2))
			munmap(p, PAGE);
		else
			map_add(p, PAGE, PROT_READ);
	}
	if (rn(t, 2))
		keep_buf(buf);
	else
		close(buf);
}

/*
 * fork: the child does a few things with what the parent had (without
 * taking any of our locks: another thread may have held them at fork
 * time) and exits, leaving whatever it made to the kernel to clean up.
 */
static void op_fork(struct th *t)
{
	int fds[NSLOT], status;
	struct rec r[4];
	int nr = 0;
	pid_t pid;

	for (int i = 0; i < 4; i++)
		nr += rec_pick(t, -1, 0, &r[nr]);
	for (int s = 0; s < NSLOT; s++) {
		slot_get(s);
		fds[s] = slots[s].fd;
	}
	flush_calls(t);
	pid = fork();
	for (int s = 0; s < NSLOT; s++)
		if (pid)
			slot_put(s);
	if (pid < 0)
		return;
	if (pid == 0) {
		struct metadef_alloc a;
		unsigned char v;
		uint64_t calls = 0;
		void *p;

		alarm(20);
		for (int k = 0; k < 6; k++) {
			int fd = fds[rn(t, NSLOT)];

			calls += 2;
			if (!alloc(fd, (1 + rn(t, 4)) * PAGE, &a)) {
				p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
					 MAP_SHARED, fd, a.mmap_offset);
				if (p != MAP_FAILED)
					touch(p, 1, 0x5a, &v);
				if (rn(t, 2))
					release(fd, a.handle);
			}
			if (nr) {
				struct rec *x = &r[rn(t, nr)];

				calls++;
				copy(fds[x->slot], x->va, x->va + PAGE, PAGE);
				p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED,
					 fds[x->slot], x->off);
				if (p != MAP_FAILED)
					touch(p, 0, 0, &v);
			}
		}
		add(&sh->calls, calls);
		add(&mine->calls, calls);
		_exit(0);
	}
	add(&mine->forks, 1);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		oddity("a forked child ended with status %#x", status);
}

/* Grant one of our regions to another worker's domain; import theirs. */
static void op_share(struct th *t)
{
	struct metadef_import im;
	struct metadef_grant g;
	uint64_t token;
	uint32_t target;
	struct rec r;
	int q, s;

	if (rn(t, 2) && rec_pick(t, -1, 1, &r)) {
		q = pick_peer(t, rn(t, 4) != 0);
		memset(&g, 0, sizeof(g));
		g.handle = r.handle;
		g.domain_id = __atomic_load_n(&sh->p[q].dom[rn(t, NSLOT)],
					      __ATOMIC_RELAXED);
		g.flags = METADEF_SHARE_READ |
			  (rn(t, 2) ? METADEF_SHARE_WRITE : 0);
		slot_get(r.slot);
		if (!fz_ioctl(t, slots[r.slot].fd, METADEF_IOC_GRANT, &g))
			publish_token(g.token, g.domain_id);
		slot_put(r.slot);
		return;
	}
	q = pick_peer(t, 0);
	if (!read_token(t, q, &token, &target))
		return;
	for (s = 0; s < NSLOT; s++) {
		uint32_t gen;

		slot_get(s);
		gen = slots[s].gen;
		if (slots[s].dom == target) {
			memset(&im, 0, sizeof(im));
			im.token = token;
			if (!fz_ioctl(t, slots[s].fd, METADEF_IOC_IMPORT, &im))
				rec_add(s, gen, im.handle, 1, im.mmap_offset,
					im.dev_va, im.size);
		}
		slot_put(s);
	}
}

/*
 * The probes: worker @q's canary from a new domain of our own (which
 * holds nothing, so every use of another's handle must fail), and from
 * one of our fuzzed domains (which never got the canary).
 */
static void op_probe(struct th *t)
{
	int q = pick_peer(t, 0), fd, s = rn(t, NSLOT), who = -1;
	struct peer *pq = &sh->p[q];
	uint32_t h = pq->canary_handle, myid, target;
	struct metadef_alloc a;
	unsigned char *p;
	uint64_t token;
	int ret;

	fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	add(&mine->probes, 1);
	myid = domain_of(fd);
	t->calls++;
	{
		struct metadef_free f = { .handle = h };
		struct metadef_grant g = { .handle = h, .domain_id = myid + 1,
					   .flags = METADEF_SHARE_READ };
		struct metadef_revoke rv = { .handle = h };
		struct metadef_export e = { .handle = h };

		g.domain_id = __atomic_load_n(&mine->dom[s], __ATOMIC_RELAXED);
		ret = fz_ioctl(t, fd, METADEF_IOC_GRANT, &g);
		probe(ret != 0, "GRANT of worker %d's canary handle %u from a new domain",
		      q, h);
		ret = fz_ioctl(t, fd, METADEF_IOC_EXPORT_DMABUF, &e);
		probe(ret != 0, "EXPORT of worker %d's canary handle %u from a new domain",
		      q, h);
		if (!ret)
			close(e.fd);
		ret = fz_ioctl(t, fd, METADEF_IOC_REVOKE, &rv);
		probe(ret != 0, "REVOKE of worker %d's canary handle %u from a new domain",
		      q, h);
		ret = fz_ioctl(t, fd, METADEF_IOC_FREE, &f);
		probe(ret != 0, "FREE of worker %d's canary handle %u from a new domain",
		      q, h);
	}
	p = mmap(NULL, CANARY_SIZE, PROT_READ, MAP_SHARED, fd, pq->canary_off);
	probe(p == MAP_FAILED, "mmap of worker %d's canary offset %#llx from a new domain",
	      q, (unsigned long long)pq->canary_off);
	if (p != MAP_FAILED)
		munmap(p, CANARY_SIZE);
	slot_get(s);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, slots[s].fd,
		 pq->canary_off + PAGE * rn(t, CANARY_SIZE / PAGE));
	probe(p == MAP_FAILED, "mmap of worker %d's canary offset from a fuzzed domain",
	      q);
	if (p != MAP_FAILED)
		munmap(p, PAGE);
	slot_put(s);
	if (!privileged) {
		struct metadef_quota qt = { .domain_id = pq->canary_dom,
					    .quota = PAGE };

		ret = fz_ioctl(t, fd, METADEF_IOC_SET_QUOTA, &qt);
		probe(ret != 0, "SET_QUOTA of worker %d's canary domain without privileges",
		      q);
	}
	/* Tokens naming some other domain. */
	for (int k = 0; k < 2; k++) {
		struct metadef_import im;

		if (!read_token(t, pick_peer(t, 0), &token, &target) ||
		    target == myid)
			continue;
		memset(&im, 0, sizeof(im));
		im.token = token;
		ret = fz_ioctl(t, fd, METADEF_IOC_IMPORT, &im);
		probe(ret != 0, "IMPORT in domain %u of a token for domain %u",
		      myid, target);
	}
	/* The device side: COPY from and to the canary's VA. */
	t->calls++;
	if (!alloc(fd, CANARY_SIZE, &a)) {
		struct metadef_copy cp = { .src_va = pq->canary_va,
					   .dst_va = a.dev_va,
					   .size = CANARY_SIZE };

		ret = fz_ioctl(t, fd, METADEF_IOC_COPY, &cp);
		probe(ret != 0, "COPY from worker %d's canary VA %#llx from a new domain",
		      q, (unsigned long long)cp.src_va);
		cp.src_va = a.dev_va + PAGE * rn(t, 4);
		cp.dst_va = pq->canary_va + PAGE * rn(t, 4);
		cp.size = PAGE;
		ret = fz_ioctl(t, fd, METADEF_IOC_COPY, &cp);
		probe(ret != 0, "COPY to worker %d's canary VA %#llx from a new domain",
		      q, (unsigned long long)cp.dst_va);
		p = mmap(NULL, CANARY_SIZE, PROT_READ, MAP_SHARED, fd,
			 a.mmap_offset);
		if (p != MAP_FAILED) {
			probe(!holds_canary(p, CANARY_SIZE, &who),
			      "worker %d's canary bytes in a prober's region", who);
			munmap(p, CANARY_SIZE);
		}
	}
	close(fd);
	/* And from a fuzzed domain, into and out of its own memory. */
	{
		struct metadef_copy cp;
		struct rec r;

		if (!rec_pick(t, s, 0, &r))
			return;
		memset(&cp, 0, sizeof(cp));
		cp.src_va = pq->canary_va;
		cp.dst_va = r.va;
		cp.size = PAGE;
		slot_get(s);
		if (slots[s].gen == r.gen) {
			ret = fz_ioctl(t, slots[s].fd, METADEF_IOC_COPY, &cp);
			probe(ret != 0, "COPY from worker %d's canary VA in a fuzzed domain",
			      q);
			cp.src_va = r.va;
			cp.dst_va = pq->canary_va;
			ret = fz_ioctl(t, slots[s].fd, METADEF_IOC_COPY, &cp);
			probe(ret != 0, "COPY to worker %d's canary VA in a fuzzed domain",
			      q);
		}
		slot_put(s);
	}
}

/*
 * A read-only grant between two new domains of this thread's own: the
 * importer may read, but not map for writing, nor mprotect, nor COPY into
 * it; after REVOKE it may do nothing (a page it had touched must SIGBUS).
 * Not our fuzzed domains: there another thread may FREE the region and
 * ALLOC another that gets its handle number, and the REVOKE would then
 * take back nothing of ours.
 */
static void op_readonly(struct th *t)
{
	struct metadef_import im;
	struct metadef_revoke rv;
	struct metadef_grant g;
	struct metadef_copy cp;
	struct metadef_alloc a;
	unsigned char *own, *imp, v;
	int ret, a0, a1;

	a0 = open(DEV, O_RDWR | O_CLOEXEC);
	a1 = open(DEV, O_RDWR | O_CLOEXEC);
	t->calls++;
	if (a0 < 0 || a1 < 0 || alloc(a0, 4 * PAGE, &a))
		goto out;
	own = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, a0,
		   a.mmap_offset);
	if (own != MAP_FAILED) {
		memset(own, 0xa5, 4 * PAGE);
		munmap(own, 4 * PAGE);
	}
	memset(&g, 0, sizeof(g));
	g.handle = a.handle;
	g.domain_id = domain_of(a1);
	g.flags = METADEF_SHARE_READ;
	memset(&im, 0, sizeof(im));
	if (fz_ioctl(t, a0, METADEF_IOC_GRANT, &g))
		goto free;
	im.token = g.token;
	if (fz_ioctl(t, a1, METADEF_IOC_IMPORT, &im))
		goto free;
	imp = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, a1,
		   im.mmap_offset);
	probe(imp == MAP_FAILED, "a read-only import mapped for writing");
	if (imp != MAP_FAILED)
		munmap(imp, 4 * PAGE);
	imp = mmap(NULL, 4 * PAGE, PROT_READ, MAP_SHARED, a1, im.mmap_offset);
	if (imp != MAP_FAILED) {
		touch(imp, 0, 0, &v);
		ret = mprotect(imp, 4 * PAGE, PROT_READ | PROT_WRITE);
		probe(ret != 0, "a read-only import's mapping made writable");
	}
	memset(&cp, 0, sizeof(cp));
	cp.src_va = im.dev_va + PAGE;
	cp.dst_va = im.dev_va;
	cp.size = PAGE;
	ret = fz_ioctl(t, a1, METADEF_IOC_COPY, &cp);
	probe(ret != 0, "COPY into a read-only import");

	memset(&rv, 0, sizeof(rv));
	rv.handle = a.handle;
	rv.domain_id = g.domain_id;
	ret = fz_ioctl(t, a0, METADEF_IOC_REVOKE, &rv);
	if (!ret) {
		if (imp != MAP_FAILED) {
			ret = touch(imp, 0, 0, &v);
			probe(ret == SIGBUS, "a revoked import's page read (signal %d)",
			      ret);
		}
		cp.src_va = im.dev_va;
		cp.dst_va = im.dev_va + PAGE;
		ret = fz_ioctl(t, a1, METADEF_IOC_COPY, &cp);
		probe(ret != 0, "COPY from a revoked import");
	}
	if (imp != MAP_FAILED)
		munmap(imp, 4 * PAGE);
	release(a1, im.handle);
	t->calls++;
free:
	release(a0, a.handle);
	t->calls++;
out:
	if (a0 >= 0)
		close(a0);
	if (a1 >= 0)
		close(a1);
}

static void op_canary(void)
{
	int bad = canary_changed();

	probe(bad == 0, "worker %d's canary: %d words changed", me, bad);
}

static void *fuzz_thread(void *arg)
{
	struct th *t = arg;

	while (!stopping()) {
		unsigned int op = rn(t, 100);

		if (op < 62)
			op_ioctl(t);
		else if (op < 69)
			op_mmap(t);
		else if (op < 78)
			op_touch(t);
		else if (op < 82)
			op_munmap(t);
		else if (op < 85)
			op_export(t);
		else if (op < 89)
			op_share(t);
		else if (op < 93)
			op_probe(t);
		else if (op < 96)
			op_readonly(t);
		else if (op < 97)
			op_reopen(t);
		else if (op < 98)
			op_fork(t);
		else if (op < 99)
			op_canary();
		else
			op_pass(t);
	}
	flush_calls(t);
	return NULL;
}

/* A page and its read-only alias, and a page before a guard page. */
static int thread_pages(struct th *t)
{
	int mfd = memfd_create("fuzz", MFD_CLOEXEC);

	if (mfd < 0 || ftruncate(mfd, PAGE))
		return -1;
	t->rw = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	t->ro = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, mfd, 0);
	close(mfd);
	t->edge = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->rw == MAP_FAILED || t->ro == MAP_FAILED ||
	    t->edge == MAP_FAILED)
		return -1;
	return mprotect(t->edge + PAGE, PAGE, PROT_NONE);
}

static int stopped;		/* counted in sh->nstopped */

/* Exit status of a worker: 0, or which setup step failed. */
static int worker(int idx, uint64_t seed)
{
	pthread_t tid[MAX_THREADS];
	struct th th[MAX_THREADS];
	uint64_t s = seed;
	int bad;

	me = idx;
	mine = &sh->p[idx];
	privileged = !(idx & 1);
	alarm(cfg.limit + 60);
	if (!privileged &&
	    become_nobody(0))
		return 10;
	catch_faults();
	if (make_canary(md_rand(&s)))
		return 11;
	for (int i = 0; i < NSLOT; i++) {
		pthread_rwlock_init(&slots[i].lock, NULL);
		slots[i].fd = open(DEV, O_RDWR | O_CLOEXEC);
		if (slots[i].fd < 0)
			return 12;
		slots[i].dom = domain_of(slots[i].fd);
		mine->dom[i] = slots[i].dom;
	}
	__atomic_store_n(&mine->ready, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sh->nready, 1, __ATOMIC_RELAXED);
	/* Start together, so that everyone has peers to probe. */
	for (int w = 0; w < 10000 && !stopping() &&
	     __atomic_load_n(&sh->nready, __ATOMIC_RELAXED) < cfg.procs; w++)
		usleep(1000);

	for (unsigned int i = 0; i < cfg.threads; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].id = i;
		th[i].rng = md_rand(&s);
		if (thread_pages(&th[i]))
			return 13;
		if (pthread_create(&tid[i], NULL, fuzz_thread, &th[i]))
			return 14;
	}
	for (unsigned int i = 0; i < cfg.threads; i++)
		pthread_join(tid[i], NULL);
	/*
	 * Our canary is freed when we exit, and its offset, VA and memory
	 * go to someone else: no exit until nobody probes any more.
	 */
	stopped = 1;
	__atomic_add_fetch(&sh->nstopped, 1, __ATOMIC_ACQ_REL);
	for (int w = 0; w < 60000 &&
	     __atomic_load_n(&sh->nstopped, __ATOMIC_ACQUIRE) < cfg.procs; w++)
		usleep(1000);

	bad = canary_changed();
	probe(bad == 0, "worker %d's canary at the end: %d words changed", me,
	      bad);
	/* Half the workers tidy up, the others leave it all to exit. */
	if (seed & 1) {
		for (int i = 0; i < NMAP; i++)
			if (maps[i].p)
				munmap(maps[i].p, maps[i].len);
		for (int i = 0; i < NBUF; i++)
			if (bufs[i] >= 0)
				close(bufs[i]);
		for (int i = 0; i < NSLOT; i++)
			close(slots[i].fd);
		close(canary_fd);
	}
	return 0;
}

/* ------------------------------------------------------------ the test */

static uint64_t total(size_t field)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < cfg.procs; i++)
		n += *(uint64_t *)((char *)&sh->p[i] + field);
	return n;
}

#define TOTAL(f) total(offsetof(struct peer, f))

TEST(fuzz)
{
	pid_t pids[MAX_PROCS];
	struct md_leftovers l;
	uint64_t start, elapsed_ms, calls;
	int status, hung = 0, failed_workers = 0;
	long long leaks;
	unsigned int i;

	l = md_leftovers();
	if (l.pool_size < 0)
		SKIP(return, "no metadef debugfs: cannot check for leaks");
	ASSERT_EQ(0, md_leaks(0, &l)) {
		TH_LOG("not clean before the run: %d regions, %d domains, %lld of %lld bytes free",
		       l.regions, l.domains, l.pool_free, l.pool_size);
	}
	printf("# fuzz: seed %#llx, %u processes x %u threads, ",
	       (unsigned long long)cfg.seed, cfg.procs, cfg.threads);
	if (cfg.max_calls)
		printf("%llu calls", (unsigned long long)cfg.max_calls);
	else
		printf("%u s and at least %llu calls", cfg.seconds,
		       (unsigned long long)cfg.min_calls);
	printf(" (replay: METADEF_FUZZ_SEED=%#llx)\n",
	       (unsigned long long)cfg.seed);
	fflush(stdout);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	for (i = 0; i < cfg.procs; i++)
		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0,
					socks[i]));
	start = now_ns();
	for (i = 0; i < cfg.procs; i++) {
		uint64_t s = cfg.seed ^ (0x1000193ULL * (i + 1));

		s = md_rand(&s);
		fflush(stdout);
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			int ret = worker(i, s);

			/* Failed early: the others need not wait for us. */
			if (!stopped)
				__atomic_add_fetch(&sh->nstopped, 1,
						   __ATOMIC_ACQ_REL);
			_exit(ret);
		}
	}

	/* Only workers hold the sockets: the last one out drops what is in flight. */
	for (i = 0; i < cfg.procs; i++) {
		close(socks[i][0]);
		close(socks[i][1]);
	}

	/* Until the budget is spent, or the count is reached, or hung. */
	for (;;) {
		usleep(100 * 1000);
		elapsed_ms = (now_ns() - start) / 1000000;
		calls = __atomic_load_n(&sh->calls, __ATOMIC_RELAXED);
		if (__atomic_load_n(&sh->stop, __ATOMIC_RELAXED))
			break;
		if (!cfg.max_calls && elapsed_ms >= cfg.seconds * 1000ULL &&
		    calls >= cfg.min_calls)
			break;
		if (elapsed_ms >= cfg.limit * 1000ULL) {
			hung = 1;
			break;
		}
	}
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);

	/* Every worker must be gone within a minute of being told. */
	for (i = 0; i < cfg.procs; i++) {
		pid_t r = 0;

		for (int w = 0; w < 600 && r == 0; w++) {
			r = waitpid(pids[i], &status, WNOHANG);
			if (r == 0)
				usleep(100 * 1000);
		}
		if (r == 0) {
			TH_LOG("worker %u did not stop: killed", i);
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &status, 0);
			hung = 1;
			continue;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			TH_LOG("worker %u (%s) ended with status %#x", i,
			       i & 1 ? "unprivileged" : "root", status);
			failed_workers++;
		}
	}
	elapsed_ms = (now_ns() - start) / 1000000;
	calls = sh->calls;

	printf("# fuzz: errnos checked: %llu ENOTTY, %llu EBADF, %llu EINVAL\n",
	       (unsigned long long)TOTAL(enotty), (unsigned long long)TOTAL(ebadf),
	       (unsigned long long)TOTAL(einval));
	printf("# fuzz: %llu ioctls in %llu.%03llu s (%llu/s); %llu mmaps, %llu touches (%llu signals), %llu forks, %llu reopens, %llu descriptors passed, %llu dma-bufs, %llu probes\n",
	       (unsigned long long)calls, (unsigned long long)elapsed_ms / 1000,
	       (unsigned long long)elapsed_ms % 1000,
	       (unsigned long long)(elapsed_ms ? calls * 1000 / elapsed_ms : 0),
	       (unsigned long long)TOTAL(maps), (unsigned long long)TOTAL(touches),
	       (unsigned long long)TOTAL(signals), (unsigned long long)TOTAL(forks),
	       (unsigned long long)TOTAL(reopens), (unsigned long long)TOTAL(passes),
	       (unsigned long long)TOTAL(exports),
	       (unsigned long long)TOTAL(probes));
	printf("# METADEF-FIGURE ioctls_fuzzed %llu\n", (unsigned long long)calls);
	printf("# METADEF-FIGURE cross_domain_refused %llu\n",
	       (unsigned long long)TOTAL(refused));
	printf("# METADEF-FIGURE cross_domain_breaches %llu\n",
	       (unsigned long long)TOTAL(breaches));
	fflush(stdout);
	for (i = 0; i < cfg.procs; i++) {
		if (sh->p[i].breaches)
			TH_LOG("worker %u: %llu breaches, the first: %s", i,
			       (unsigned long long)sh->p[i].breaches,
			       sh->p[i].breach);
		if (sh->p[i].oddities)
			TH_LOG("worker %u: %llu oddities, the first: %s", i,
			       (unsigned long long)sh->p[i].oddities,
			       sh->p[i].oddity);
	}

	leaks = md_leaks(3000, &l);
	EXPECT_EQ(0, leaks) {
		TH_LOG("left behind: %d regions, %d domains, %lld of %lld pool bytes not free",
		       l.regions, l.domains, l.pool_size - l.pool_free,
		       l.pool_size);
	}
	EXPECT_EQ(0, hung);
	EXPECT_EQ(0, failed_workers);
	EXPECT_EQ(0, TOTAL(breaches));
	EXPECT_EQ(0, TOTAL(oddities));
	EXPECT_LT(0, TOTAL(refused));
	if (!hung)
		EXPECT_LE(cfg.min_calls, calls);
	munmap(sh, sizeof(*sh));
}

static uint64_t opt(int *argc, char **argv, const char *flag,
		    const char *env, uint64_t dflt)
{
	uint64_t v = md_env_u64(env, dflt);

	for (int i = 1; i + 1 < *argc; i++)
		if (!strcmp(argv[i], flag)) {
			v = strtoull(argv[i + 1], NULL, 0);
			memmove(&argv[i], &argv[i + 2],
				(*argc - i - 1) * sizeof(*argv));
			*argc -= 2;
			break;
		}
	return v;
}

int main(int argc, char **argv)
{
	uint64_t calls, seconds, limit;

	cfg.seed = opt(&argc, argv, "--seed", "METADEF_FUZZ_SEED",
		       now_ns() ^ ((uint64_t)getpid() << 32));
	calls = opt(&argc, argv, "--calls", "METADEF_FUZZ_CALLS", 0);
	seconds = opt(&argc, argv, "--seconds", "METADEF_FUZZ_SECONDS",
		      calls ? 0 : 15);
	cfg.min_calls = opt(&argc, argv, "--min-calls", "METADEF_FUZZ_MIN_CALLS",
			    calls ? calls : 5000);
	cfg.procs = opt(&argc, argv, "--procs", "METADEF_FUZZ_PROCS", 4);
	cfg.threads = opt(&argc, argv, "--threads", "METADEF_FUZZ_THREADS", 3);
	cfg.max_calls = calls;
	cfg.seconds = seconds;
	if (cfg.procs < 1 || cfg.procs > MAX_PROCS)
		cfg.procs = cfg.procs < 1 ? 1 : MAX_PROCS;
	if (cfg.threads < 1 || cfg.threads > MAX_THREADS)
		cfg.threads = cfg.threads < 1 ? 1 : MAX_THREADS;
	/* A count alone gets an hour; a time budget four times itself. */
	limit = calls ? (seconds ? seconds : 3600) : 4 * seconds + 60;
	cfg.limit = limit;
	_fuzz_object.timeout = cfg.limit + 120;
	return test_harness_run(argc, argv);
}
