// SPDX-License-Identifier: GPL-2.0
/*
 * ort_peer: ONNX Runtime's CPU memory on a model, the footprint report's
 * peer. Built and run inside the trixie root that holds ONNX Runtime 1.21
 * (tools/bench/ort-root; tools/bench/ort-peer builds and runs it).
 *
 * ORT 1.21's C API has no allocator statistics, so this registers an
 * OrtAllocator of its own with the env (RegisterAllocator) and sets the
 * session entry session.use_env_allocators=1: every CPU allocation of the
 * session (initializers, the memory-pattern block, kernel scratch, outputs)
 * goes through it. It is a plain device allocator (no arena inside): each
 * block is malloc'ed, its size kept in a header, and the bytes held are
 * counted (current and peak).
 *
 * Sequential execution, EnableMemPattern, one thread, graph optimizations
 * all (default) or off (--no-opt). Every graph input, the weights of
 * models that declare them as inputs included, is fed with a tensor this
 * program allocates itself, outside the counted allocator. The model runs
 * three times: from the second run on, ORT places the activations by the
 * memory pattern it recorded, in one block per run (the activation arena),
 * freed at the run's end; graph outputs and kernel scratch are allocated
 * apart.
 *
 * One JSON line on stdout:
 *   arena        the largest single allocation during run 2: the
 *                memory-pattern block (checked: the same size in run 3,
 *                and the allocation log, --log FILE, shows it)
 *   arena_run3   the same in run 3
 *   first        the first allocation of run 2: ORT allocates the
 *                memory-pattern block when it sets up the run's frame, so
 *                it equals arena when the block is the largest allocation
 *   run_peak     the most bytes held during run 2 above what was held
 *                when it started: arena + kernel scratch + outputs
 *   session      bytes held between runs (initializers, prepacked weights)
 *   allocs       allocations during run 2; allocs_total over the whole life
 *
 * ORT's own messages (Debian's build prints thousands of operator-schema
 * warnings on stderr) go to /dev/null, or to --log FILE; the library is
 * dlopen()ed after stderr is redirected so that none escapes.
 *
 * usage: ort_peer [--no-opt] [--dim NAME=N]... [--input NAME=DIMS]...
 *                 [--log FILE] MODEL.onnx
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxruntime_c_api.h>

#define MAX_ARGS	16
#define MAX_RANK	16
#define RUNS		3
#define HDR		64	/* header before each block; keeps 64 B alignment */

static const OrtApi *ort;
static FILE *errf;		/* our messages: the original stderr */
static FILE *alog;		/* the allocation log, or NULL */

/* ------------------------------------------------------------ allocator */

struct counting {
	OrtAllocator base;
	OrtMemoryInfo *info;
	pthread_mutex_t lock;
	uint64_t cur, peak;		/* bytes held, and the most since reset */
	uint64_t largest;		/* largest single block since reset */
	uint64_t first;			/* the first block since reset */
	uint64_t nalloc, nalloc_total;
	int run;			/* 0: session setup, 1..RUNS */
};

static struct counting ca = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *ORT_API_CALL ca_alloc(OrtAllocator *a, size_t size)
{
	struct counting *c = (struct counting *)a;
	void *p;

	if (posix_memalign(&p, HDR, HDR + size))
		return NULL;
	*(uint64_t *)p = size;
	pthread_mutex_lock(&c->lock);
	c->cur += size;
	if (c->cur > c->peak)
		c->peak = c->cur;
	if (size > c->largest)
		c->largest = size;
	if (!c->nalloc)
		c->first = size;
	c->nalloc++;
	c->nalloc_total++;
	if (alog)
		fprintf(alog, "run %d alloc %zu held %" PRIu64 "\n", c->run,
			size, c->cur);
	pthread_mutex_unlock(&c->lock);
	return (char *)p + HDR;
}

static void ORT_API_CALL ca_free(OrtAllocator *a, void *q)
{
	struct counting *c = (struct counting *)a;
	char *p;
	uint64_t size;

	if (!q)
		return;
	p = (char *)q - HDR;
	size = *(uint64_t *)p;
	pthread_mutex_lock(&c->lock);
	c->cur -= size;
	if (alog)
		fprintf(alog, "run %d free %" PRIu64 " held %" PRIu64 "\n",
			c->run, size, c->cur);
	pthread_mutex_unlock(&c->lock);
	free(p);
}

static const OrtMemoryInfo *ORT_API_CALL ca_info(const OrtAllocator *a)
{
	return ((const struct counting *)a)->info;
}

/* Start a run: the peak and largest block from here on. */
static uint64_t ca_reset(int run)
{
	uint64_t held;

	pthread_mutex_lock(&ca.lock);
	ca.run = run;
	ca.peak = ca.cur;
	ca.largest = 0;
	ca.first = 0;
	ca.nalloc = 0;
	held = ca.cur;
	pthread_mutex_unlock(&ca.lock);
	if (alog)
		fprintf(alog, "run %d start held %" PRIu64 "\n", run, held);
	return held;
}

/* ------------------------------------------------------------ helpers */

static void die(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	char *c;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (c = buf; *c; c++)
		if (*c == '"' || *c == '\\' || *c == '\n')
			*c = '\'';
	printf("{\"error\":\"%s\"}\n", buf);
	fprintf(errf, "ort_peer: %s\n", buf);
	exit(1);
}

static void check(OrtStatus *st, const char *what)
{
	if (!st)
		return;
	die("%s: %s", what, ort->GetErrorMessage(st));
}

struct named {
	const char *name;
	char *val;
};

static struct named dims[MAX_ARGS], inputs[MAX_ARGS];
static int ndims, ninputs;

static void add_named(struct named *v, int *n, char *arg, const char *opt)
{
	char *eq = strchr(arg, '=');

	if (!eq || eq == arg || *n == MAX_ARGS)
		die("bad %s '%s' (NAME=VALUE)", opt, arg);
	*eq = '\0';
	v[*n].name = arg;
	v[*n].val = eq + 1;
	(*n)++;
}

static const char *lookup(const struct named *v, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return v[i].val;
	return NULL;
}

static int64_t parse_dim(const char *s, const char *what)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		die("%s: bad dimension '%s'", what, s);
	return v;
}

static size_t elem_size(ONNXTensorElementDataType t)
{
	switch (t) {
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
		return 4;
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
		return 8;
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
		return 2;
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
	case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
		return 1;
	default:
		return 0;
	}
}

/*
 * Input @i of the session as a tensor of this program's own memory: its
 * shape from --input, else the model's with symbolic dimensions from
 * --dim. Floats are filled with a small constant, integers with 0 (valid
 * indices for embeddings, an all-zero mask).
 */
static OrtValue *make_input(OrtSession *s, size_t i, const char *name,
			    const OrtMemoryInfo *mi, void **data)
{
	int64_t shape[MAX_RANK];
	const char *sym[MAX_RANK];
	const OrtTensorTypeAndShapeInfo *ti;
	ONNXTensorElementDataType et;
	OrtTypeInfo *info;
	OrtValue *v = NULL;
	size_t rank, k, es, n = 1;
	const char *given;

	check(ort->SessionGetInputTypeInfo(s, i, &info), "input type");
	check(ort->CastTypeInfoToTensorInfo(info, &ti), "input tensor info");
	if (!ti)
		die("input '%s' is not a tensor", name);
	check(ort->GetTensorElementType(ti, &et), "element type");
	check(ort->GetDimensionsCount(ti, &rank), "rank");
	if (rank > MAX_RANK)
		die("input '%s': rank %zu", name, rank);
	check(ort->GetDimensions(ti, shape, rank), "dimensions");
	check(ort->GetSymbolicDimensions(ti, sym, rank), "symbolic dims");
	given = lookup(inputs, ninputs, name);
	if (given) {
		char buf[256], *tok, *save = NULL;

		snprintf(buf, sizeof(buf), "%s", given);
		k = 0;
		for (tok = strtok_r(buf, "x", &save); tok;
		     tok = strtok_r(NULL, "x", &save)) {
			if (k == rank)
				die("--input %s: rank is %zu", name, rank);
			shape[k++] = parse_dim(tok, name);
		}
		if (k != rank)
			die("--input %s: rank is %zu", name, rank);
	}
	for (k = 0; k < rank; k++) {
		if (shape[k] < 0) {
			const char *d = sym[k] && *sym[k] ?
				lookup(dims, ndims, sym[k]) : NULL;

			if (!d)
				die("input '%s': dimension %zu ('%s') has no value (--dim NAME=N or --input %s=DIMS)",
				    name, k, sym[k] ? sym[k] : "", name);
			shape[k] = parse_dim(d, sym[k]);
		}
		n *= (size_t)shape[k];
	}
	es = elem_size(et);
	if (!es)
		die("input '%s': element type %d not supported", name, (int)et);
	*data = malloc(n ? n * es : 1);
	if (!*data)
		die("input '%s': %zu bytes: out of memory", name, n * es);
	if (et == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
		for (k = 0; k < n; k++)
			((float *)*data)[k] = 0.01f;
	} else {
		memset(*data, 0, n * es);
	}
	check(ort->CreateTensorWithDataAsOrtValue(mi, *data, n * es, shape,
						  rank, et, &v), "input tensor");
	ort->ReleaseTypeInfo(info);
	return v;
}

static void usage(void)
{
	fprintf(errf, "usage: ort_peer [--no-opt] [--dim NAME=N]... "
		"[--input NAME=DIMS]... [--log FILE] MODEL.onnx\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const OrtApiBase *(*get_base)(void);
	const char *model = NULL, *log_path = NULL;
	OrtSessionOptions *so;
	OrtMemoryInfo *cpu;
	OrtAllocator *dflt;
	OrtSession *sess;
	OrtEnv *env;
	size_t nin, nout, i;
	char **in_names, **out_names;
	OrtValue **in_vals, **out_vals;
	void **in_data;
	uint64_t held[RUNS + 1], peak[RUNS + 1], largest[RUNS + 1];
	uint64_t nalloc[RUNS + 1], first[RUNS + 1];
	int opt = 1, run, fd, a;
	void *lib;

	/* Our messages to the real stderr; ORT's to /dev/null or the log. */
	fd = dup(2);
	errf = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!errf)
		errf = stdout;
	setvbuf(errf, NULL, _IONBF, 0);
	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--no-opt"))
			opt = 0;
		else if (!strcmp(argv[a], "--dim") && a + 1 < argc)
			add_named(dims, &ndims, argv[++a], "--dim");
		else if (!strcmp(argv[a], "--input") && a + 1 < argc)
			add_named(inputs, &ninputs, argv[++a], "--input");
		else if (!strcmp(argv[a], "--log") && a + 1 < argc)
			log_path = argv[++a];
		else if (argv[a][0] == '-' || model)
			usage();
		else
			model = argv[a];
	}
	if (!model)
		usage();
	fd = open(log_path ? log_path : "/dev/null",
		  O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, 2) < 0)
		die("%s: %s", log_path ? log_path : "/dev/null",
		    strerror(errno));
	close(fd);
	if (log_path) {
		alog = fdopen(dup(2), "w");
		if (!alog)
			die("%s: %s", log_path, strerror(errno));
	}

	lib = dlopen("libonnxruntime.so.1.21", RTLD_NOW);
	if (!lib)
		lib = dlopen("libonnxruntime.so", RTLD_NOW);
	if (!lib)
		die("dlopen libonnxruntime: %s", dlerror());
	get_base = (const OrtApiBase *(*)(void))dlsym(lib, "OrtGetApiBase");
	if (!get_base)
		die("OrtGetApiBase: %s", dlerror());
	ort = get_base()->GetApi(ORT_API_VERSION);
	if (!ort)
		die("ONNX Runtime %s has no API version %d",
		    get_base()->GetVersionString(), ORT_API_VERSION);

	check(ort->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "ort_peer", &env), "env");
	check(ort->CreateMemoryInfo("Cpu", OrtDeviceAllocator, 0,
				    OrtMemTypeDefault, &ca.info), "memory info");
	ca.base.version = ORT_API_VERSION;
	ca.base.Alloc = ca_alloc;
	ca.base.Free = ca_free;
	ca.base.Info = ca_info;
	ca.base.Reserve = ca_alloc;
	check(ort->RegisterAllocator(env, &ca.base), "RegisterAllocator");

	check(ort->CreateSessionOptions(&so), "session options");
	check(ort->AddSessionConfigEntry(so, "session.use_env_allocators", "1"),
	      "session.use_env_allocators");
	check(ort->EnableMemPattern(so), "EnableMemPattern");
	check(ort->SetSessionExecutionMode(so, ORT_SEQUENTIAL), "sequential");
	check(ort->SetIntraOpNumThreads(so, 1), "intra-op threads");
	check(ort->SetInterOpNumThreads(so, 1), "inter-op threads");
	check(ort->SetSessionGraphOptimizationLevel(so, opt ? ORT_ENABLE_ALL :
						    ORT_DISABLE_ALL),
	      "optimization level");
	check(ort->CreateSession(env, model, so, &sess), "CreateSession");

	/* Names through ORT's default allocator: not counted, not the session's. */
	check(ort->GetAllocatorWithDefaultOptions(&dflt), "default allocator");
	check(ort->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault,
				       &cpu), "cpu memory info");
	check(ort->SessionGetInputCount(sess, &nin), "input count");
	check(ort->SessionGetOutputCount(sess, &nout), "output count");
	in_names = calloc(nin + 1, sizeof(*in_names));
	in_vals = calloc(nin + 1, sizeof(*in_vals));
	in_data = calloc(nin + 1, sizeof(*in_data));
	out_names = calloc(nout + 1, sizeof(*out_names));
	out_vals = calloc(nout + 1, sizeof(*out_vals));
	if (!in_names || !in_vals || !in_data || !out_names || !out_vals)
		die("out of memory");
	for (i = 0; i < nin; i++) {
		check(ort->SessionGetInputName(sess, i, dflt, &in_names[i]),
		      "input name");
		in_vals[i] = make_input(sess, i, in_names[i], cpu, &in_data[i]);
	}
	for (i = 0; i < nout; i++)
		check(ort->SessionGetOutputName(sess, i, dflt, &out_names[i]),
		      "output name");

	held[0] = ca_reset(0);
	for (run = 1; run <= RUNS; run++) {
		held[run] = ca_reset(run);
		memset(out_vals, 0, nout * sizeof(*out_vals));
		check(ort->Run(sess, NULL, (const char *const *)in_names,
			       (const OrtValue *const *)in_vals, nin,
			       (const char *const *)out_names, nout, out_vals),
		      "Run");
		for (i = 0; i < nout; i++)
			ort->ReleaseValue(out_vals[i]);
		pthread_mutex_lock(&ca.lock);
		peak[run] = ca.peak;
		largest[run] = ca.largest;
		nalloc[run] = ca.nalloc;
		first[run] = ca.first;
		pthread_mutex_unlock(&ca.lock);
	}
	if (alog)
		fprintf(alog, "end held %" PRIu64 "\n", ca.cur);

	printf("{\"model\":\"%s\",\"ort\":\"%s\",\"opt\":%d,\"arena\":%" PRIu64
	       ",\"arena_run3\":%" PRIu64
	       ",\"first\":%" PRIu64 ",\"run_peak\":%" PRIu64
	       ",\"run1_peak\":%" PRIu64 ",\"session\":%" PRIu64
	       ",\"allocs\":%" PRIu64 ",\"allocs_total\":%" PRIu64 "}\n",
	       model, get_base()->GetVersionString(), opt, largest[2],
	       largest[3], first[2], peak[2] - held[2], peak[1] - held[1], held[2],
	       nalloc[2], ca.nalloc_total);
	fflush(stdout);

	for (i = 0; i < nin; i++) {
		ort->ReleaseValue(in_vals[i]);
		free(in_data[i]);
		dflt->Free(dflt, in_names[i]);
	}
	for (i = 0; i < nout; i++)
		dflt->Free(dflt, out_names[i]);
	ort->ReleaseSession(sess);
	ort->ReleaseSessionOptions(so);
	ort->ReleaseMemoryInfo(cpu);
	check(ort->UnregisterAllocator(env, ca.info), "UnregisterAllocator");
	ort->ReleaseEnv(env);
	ort->ReleaseMemoryInfo(ca.info);
	free(in_names);
	free(in_vals);
	free(in_data);
	free(out_names);
	free(out_vals);
	return 0;
}
