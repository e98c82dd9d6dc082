/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kselftests: touching mapped device memory that may fault (SIGBUS after a
 * REVOKE, SIGSEGV past a mapping) without dying of it, from any thread.
 * catch_faults() once per process, then touch() for each access.
 */
#ifndef METADEF_KSFT_MD_TOUCH_H
#define METADEF_KSFT_MD_TOUCH_H

#include <setjmp.h>
#include <signal.h>
#include <string.h>

static __thread sigjmp_buf tl_jb;
static __thread volatile sig_atomic_t tl_armed;

static void on_fault(int sig)
{
	if (tl_armed) {
		tl_armed = 0;
		siglongjmp(tl_jb, sig);
	}
	/* A fault outside a touch: the test's own bug. Die of it. */
	signal(sig, SIG_DFL);
	raise(sig);
}

static inline void catch_faults(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	/* Not blocked in the handler: sigsetjmp need not save the mask. */
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

/*
 * Read the byte at @p into *@out, or write @v there: 0, or the signal the
 * access raised.
 */
static inline int touch(volatile unsigned char *p, int write, unsigned char v,
			unsigned char *out)
{
	int sig = sigsetjmp(tl_jb, 0);

	if (sig)
		return sig;
	tl_armed = 1;
	if (write)
		*p = v;
	else
		*out = *p;
	tl_armed = 0;
	return 0;
}

#endif /* METADEF_KSFT_MD_TOUCH_H */
