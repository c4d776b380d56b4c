/* dsa-harness plugin ABI, version 1: an external implementation of the indexer's two-level
 * selection in a shared library, run with `dsa-harness replay --impl plugin:PATH.so`.
 *
 * C99, no dependency but <stddef.h> and <stdint.h>. A plugin exports one function,
 *
 *     const dsa_plugin_v1* dsa_plugin_entry(void);
 *
 * returning a static table whose first field is DSA_PLUGIN_ABI_VERSION. The harness loads the
 * library in a child process (a crash costs that run, not the replay; a hang is not timed out),
 * calls create() once per batch, then the protocol steps in the serving engine's order: publish() on the source
 * layer, select() on each consumer, plain() on each plain layer, then timings() and destroy().
 * Semantics, layouts and the tie rule are those of docs/semantics.md and docs/batch-format.md;
 * docs/plugins.md walks through an example.
 *
 * Every array is row-major and owned by the harness; inputs are valid for the plugin's lifetime
 * (create .. destroy), outputs only during the call that fills them. A function returns 0 on
 * success; otherwise it writes a NUL-terminated reason into `error` (DSA_PLUGIN_ERROR_BYTES) and
 * returns non-zero, which fails the run with that reason. Rows with rows_wanted[r] == 0 may be
 * left alone: their outputs are overwritten with padding. Every entry of a wanted row must be
 * written: an entry left unwritten or out of range is reported as malformed output. */
#ifndef DSA_HARNESS_PLUGIN_H
#define DSA_HARNESS_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change of the structures below; abi_version stays the first field forever. */
#define DSA_PLUGIN_ABI_VERSION 1u

#define DSA_PLUGIN_HEADS 32          /* index heads H */
#define DSA_PLUGIN_PACKED_DIM 64     /* bytes of one packed e2m1 query or key vector (D/2) */
#define DSA_PLUGIN_SCALE_GROUPS 4    /* ue8m0 scale bytes per vector (D/32) */
#define DSA_PLUGIN_SLOT_BYTES 68     /* bytes per pool slot: 64 payload + 4 scales */
#define DSA_PLUGIN_TOPK_BLOCKS 2048  /* level-one blocks per row */
#define DSA_PLUGIN_BLOCK_PAD INT32_MAX  /* padding of a block table */
#define DSA_PLUGIN_POSITION_PAD (-1)    /* padding of a position list */
#define DSA_PLUGIN_ERROR_BYTES 512

enum dsa_plugin_role { DSA_PLUGIN_SOURCE = 0, DSA_PLUGIN_CONSUMER = 1, DSA_PLUGIN_PLAIN = 2 };

typedef struct dsa_plugin_layer {
  int32_t id;
  int32_t role;             /* enum dsa_plugin_role */
  const uint8_t* q;         /* [rows, 32, 64] packed e2m1, low nibble = even element */
  const uint8_t* q_scale;   /* [rows, 32, 4] ue8m0 exponents */
  const float* weights;     /* [rows, 32] head weights */
} dsa_plugin_layer;

typedef struct dsa_plugin_batch {
  int32_t requests;              /* Q */
  int32_t rows;                  /* R = sum(num_rows) */
  int32_t topk;                  /* positions per row (512) */
  int32_t page_size;             /* P: slots per page */
  int32_t table_width;           /* T: columns of page_table */
  int32_t compress_ratio;
  int64_t pages;                 /* rows of pool */
  int64_t tail_total;            /* sum(tail_rows); 0 without tails */
  const int32_t* num_rows;       /* [Q] rows of each request, in order */
  const int32_t* compressed_len; /* [Q] compressed keys of each request */
  const int32_t* page_table;     /* [Q, T] page of each P keys; -1 past the request's pages */
  const int32_t* tail_rows;      /* [Q] the request's last rows forming its tail, or NULL */
  const int32_t* compress_len;   /* [R] L: keys row r attends to (positions 0..L-1) */
  const uint8_t* pool;           /* [pages, P * 68]: P * 64 payload bytes, then P * 4 scales */
  const uint8_t* rows_wanted;    /* [R] 1 = compute this row */
  int32_t layer_count;
  const dsa_plugin_layer* layers;  /* ascending id */
} dsa_plugin_batch;

/* One kernel's timing as the plugin measured it (CUDA events, a host clock...). */
typedef struct dsa_plugin_timing {
  char kernel[64];   /* e.g. "mine/logits" */
  char layer[16];    /* layer id, or "all" */
  int32_t calls;     /* launches per run */
  int32_t samples;   /* >= 1 */
  double median_ms, min_ms, max_ms;
  double flops;      /* useful work of one sample, 0 when not meaningful */
  double bytes;      /* fewest bytes one sample must move, 0 when not meaningful */
} dsa_plugin_timing;

typedef struct dsa_plugin_v1 {
  uint32_t abi_version;  /* DSA_PLUGIN_ABI_VERSION */
  const char* name;      /* shown in reports and messages */
  const char* device;    /* "cpu", "cuda", ... */
  /* State for one batch, or NULL with a reason in error. */
  void* (*create)(const dsa_plugin_batch* batch, char* error);
  /* Source layer: blocks [R, 2048] (level one, ascending, DSA_PLUGIN_BLOCK_PAD after the last)
   * and the layer's own positions [R, topk] (ascending, -1 after the last). */
  int (*publish)(void* state, const dsa_plugin_layer* source, int32_t* blocks, int32_t* positions, char* error);
  /* Consumer: positions [R, topk] within the published blocks (as publish wrote them), and
   * tail_positions [tail_total, topk] on the tail table (NULL when the batch has no tails). */
  int (*select)(void* state, const dsa_plugin_layer* consumer, const int32_t* blocks, int32_t* positions,
                int32_t* tail_positions, char* error);
  /* Plain layer: top-k positions [R, topk] over all L keys. */
  int (*plain)(void* state, const dsa_plugin_layer* layer, int32_t* positions, char* error);
  /* Kernel timings of this batch's calls: writes at most `capacity`, returns how many (may be NULL). */
  int32_t (*timings)(void* state, dsa_plugin_timing* out, int32_t capacity);
  void (*destroy)(void* state);
} dsa_plugin_v1;

typedef const dsa_plugin_v1* (*dsa_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DSA_HARNESS_PLUGIN_H */
