// LD_PRELOAD helper of test_slurm_array.sh: a replay that loads it stops (sleeps) right after its
// first finished implementation run is synced to DIR/cases.jsonl, and writes its pid into the file
// DSA_TEST_STOPPED_MARK. The test then requeues the task at a known point in the middle of its run,
// however fast the machine is; without the stop a fast run could finish before the requeue lands.
// The sleep is bounded so a test that never requeues fails (no resume seen) instead of hanging.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_case_log(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  const char* tail = "/cases.jsonl";
  return (size_t)n >= strlen(tail) && strcmp(path + n - strlen(tail), tail) == 0;
}

int fsync(int fd) {
  int (*real_fsync)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  const int rc = real_fsync(fd);
  const char* mark = getenv("DSA_TEST_STOPPED_MARK");
  if (rc == 0 && mark && is_case_log(fd)) {
    FILE* f = fopen(mark, "w");
    if (f) {
      fprintf(f, "%d\n", (int)getpid());
      fclose(f);
    }
    sleep(60);
  }
  return rc;
}
