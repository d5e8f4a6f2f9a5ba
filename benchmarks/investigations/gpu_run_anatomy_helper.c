/* Times one LiteRtRunCompiledModel from inside C, for benchmarks/investigations/gpu_run_anatomy.py:
   CLOCK_MONOTONIC (time.perf_counter's clock on Linux) just before and after the run.
   Build: cc -O2 -shared -fPIC -o timed.so gpu_run_anatomy_helper.c */
#include <stdint.h>
#include <stddef.h>
#include <time.h>
typedef int (*run_fn)(void*, size_t, size_t, void*, size_t, void*);
static int64_t now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}
int timed_run(run_fn fn, void* m, size_t sig, size_t nin, void* in, size_t nout, void* out, int64_t* ns) {
    ns[0] = now(); int status = fn(m, sig, nin, in, nout, out); ns[1] = now(); return status;
}
