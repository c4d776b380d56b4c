/* Plugins with one defect each (built by tests/CMakeLists.txt with -DDSA_DEFECT=N), for
 * test_plugin*.cpp: the harness must name the plugin and keep the other implementations' results.
 * 1 crash: dereferences NULL in select;   2 malformed: a position past L in publish;
 * 3 unwritten: select writes nothing;     4 abi: reports ABI version 2;
 * 5 error: publish returns an error;      6 timings: min_ms above max_ms.
 * Apart from its defect a plugin picks positions 0..min(L, topk)-1, a valid (not correct) answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsa_harness/plugin.h"

typedef struct { dsa_plugin_batch batch; } state_t;

static void* create(const dsa_plugin_batch* batch, char* error) {
  state_t* s = (state_t*)malloc(sizeof *s);
  if (!s) { snprintf(error, DSA_PLUGIN_ERROR_BYTES, "out of memory"); return NULL; }
  s->batch = *batch;
  return s;
}

static void first_positions(const state_t* s, int32_t* positions) {
  for (int32_t r = 0; r < s->batch.rows; ++r)
    for (int32_t k = 0; k < s->batch.topk; ++k)
      positions[(size_t)r * s->batch.topk + k] = k < s->batch.compress_len[r] ? k : -1;
}

static int publish(void* p, const dsa_plugin_layer* source, int32_t* blocks, int32_t* positions, char* error) {
  const state_t* s = (const state_t*)p;
  (void)source;
  for (int32_t r = 0; r < s->batch.rows; ++r) {
    const int32_t nblocks = (s->batch.compress_len[r] + 7) / 8;
    for (int32_t b = 0; b < DSA_PLUGIN_TOPK_BLOCKS; ++b)
      blocks[(size_t)r * DSA_PLUGIN_TOPK_BLOCKS + b] = b < nblocks ? b : DSA_PLUGIN_BLOCK_PAD;
  }
  first_positions(s, positions);
  if (DSA_DEFECT == 2) positions[3] = s->batch.compress_len[0] + 100;
  if (DSA_DEFECT == 5) { snprintf(error, DSA_PLUGIN_ERROR_BYTES, "out of device memory (planted)"); return 7; }
  return 0;
}

static int select_(void* p, const dsa_plugin_layer* consumer, const int32_t* blocks, int32_t* positions,
                   int32_t* tails, char* error) {
  const state_t* s = (const state_t*)p;
  (void)consumer; (void)blocks; (void)error;
  if (DSA_DEFECT == 1) { volatile int32_t* nowhere = NULL; *nowhere = 1; }
  if (DSA_DEFECT == 3) return 0;
  first_positions(s, positions);
  if (tails) {
    int64_t t = 0;
    int32_t first = 0;
    for (int32_t q = 0; q < s->batch.requests; ++q) {
      for (int32_t r = first + s->batch.num_rows[q] - s->batch.tail_rows[q]; r < first + s->batch.num_rows[q]; ++r, ++t)
        memcpy(tails + t * s->batch.topk, positions + (size_t)r * s->batch.topk, sizeof(int32_t) * s->batch.topk);
      first += s->batch.num_rows[q];
    }
  }
  return 0;
}

static int plain(void* p, const dsa_plugin_layer* layer, int32_t* positions, char* error) {
  (void)layer; (void)error;
  first_positions((const state_t*)p, positions);
  return 0;
}

static int32_t timings(void* p, dsa_plugin_timing* out, int32_t capacity) {
  (void)p;
  if (capacity < 1) return 0;
  memset(out, 0, sizeof *out);
  snprintf(out->kernel, sizeof out->kernel, "defect/all");
  out->calls = 1;
  out->samples = 1;
  out->min_ms = DSA_DEFECT == 6 ? 5.0 : 1.0;
  out->median_ms = out->max_ms = 1.0;
  return 1;
}

/* One line in $DSA_DEFECT_DESTROY_LOG (when set) per destroy: test_plugin_host checks that a run
 * that fails after create still destroys the state. */
static void destroy(void* p) {
  const char* log = getenv("DSA_DEFECT_DESTROY_LOG");
  FILE* f = log ? fopen(log, "a") : NULL;
  if (f) {
    fputs("destroy\n", f);
    fclose(f);
  }
  free(p);
}

static const dsa_plugin_v1 table = {DSA_DEFECT == 4 ? 2u : DSA_PLUGIN_ABI_VERSION, "defect", "cpu", create, publish,
                                    select_, plain, timings, destroy};

__attribute__((visibility("default"))) const dsa_plugin_v1* dsa_plugin_entry(void) { return &table; }
