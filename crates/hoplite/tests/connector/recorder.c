/* A Kokkos Tools connector for hoplite's tests: it records every callback it gets, one line per
 * call with tab-separated fields, appended to the file that HOPLITE_TOOL_LOG names.
 *
 * The declarations follow Kokkos' Kokkos_Profiling_C_Interface.h (interface version 20240906).
 * Built with -DRECORDER_KERNELS_ONLY it defines only init, finalize and the parallel_for pair,
 * to check that hoplite calls no entry point a connector lacks.
 *
 * Environment:
 *   HOPLITE_TOOL_LOG       the file to append to (nothing is recorded without it)
 *   HOPLITE_TOOL_FENCING   when set, the connector asks for fencing around kernels
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct Kokkos_Profiling_KokkosPDeviceInfo {
  size_t deviceID;
};

struct Kokkos_Profiling_SpaceHandle {
  char name[64];
};

struct Kokkos_Tools_ToolSettings {
  bool requires_global_fencing;
  bool padding[255];
};

typedef void (*Kokkos_Tools_functionPointer)(void);

struct Kokkos_Tools_ToolProgrammingInterface {
  void (*fence)(uint32_t);
  Kokkos_Tools_functionPointer padding[31];
};

static void record(const char* format, ...) {
  const char* path = getenv("HOPLITE_TOOL_LOG");
  if (path == NULL) return;
  FILE* file = fopen(path, "a");
  if (file == NULL) return;
  va_list args;
  va_start(args, format);
  vfprintf(file, format, args);
  va_end(args);
  fputc('\n', file);
  fclose(file);
}

static uint64_t next_kernel = 1;

void kokkosp_init_library(const int load_seq, const uint64_t version, const uint32_t count,
                          struct Kokkos_Profiling_KokkosPDeviceInfo* info) {
  record("init_library\t%d\t%llu\t%u\t%s", load_seq, (unsigned long long)version, count,
         info == NULL ? "null" : "info");
}

void kokkosp_finalize_library(void) { record("finalize_library"); }

void kokkosp_begin_parallel_for(const char* name, const uint32_t device, uint64_t* id) {
  *id = next_kernel++;
  record("begin_parallel_for\t%s\t0x%08x\t%llu", name, device, (unsigned long long)*id);
}

void kokkosp_end_parallel_for(const uint64_t id) {
  record("end_parallel_for\t%llu", (unsigned long long)id);
}

#ifndef RECORDER_KERNELS_ONLY

static struct Kokkos_Tools_ToolProgrammingInterface interface;
static uint32_t next_section = 1;

void kokkosp_parse_args(int argc, char** argv) {
  char line[1024] = "parse_args";
  for (int i = 0; i < argc; ++i) {
    strncat(line, "\t", sizeof(line) - strlen(line) - 1);
    strncat(line, argv[i], sizeof(line) - strlen(line) - 1);
  }
  record("%s", line);
}

void kokkosp_request_tool_settings(const uint32_t count, struct Kokkos_Tools_ToolSettings* settings) {
  record("request_tool_settings\t%u\t%d", count, settings->requires_global_fencing ? 1 : 0);
  settings->requires_global_fencing = getenv("HOPLITE_TOOL_FENCING") != NULL;
}

void kokkosp_provide_tool_programming_interface(const uint32_t count,
                                                struct Kokkos_Tools_ToolProgrammingInterface actions) {
  interface = actions;
  record("provide_tool_programming_interface\t%u\t%s", count, actions.fence == NULL ? "null" : "fence");
}

#define KERNEL_PAIR(kind)                                                                  \
  void kokkosp_begin_##kind(const char* name, const uint32_t device, uint64_t* id) {        \
    *id = next_kernel++;                                                                    \
    record("begin_" #kind "\t%s\t0x%08x\t%llu", name, device, (unsigned long long)*id);    \
  }                                                                                         \
  void kokkosp_end_##kind(const uint64_t id) { record("end_" #kind "\t%llu", (unsigned long long)id); }

KERNEL_PAIR(parallel_reduce)
KERNEL_PAIR(parallel_scan)
KERNEL_PAIR(fence)

void kokkosp_push_profile_region(const char* name) { record("push_profile_region\t%s", name); }

void kokkosp_pop_profile_region(void) { record("pop_profile_region"); }

void kokkosp_allocate_data(const struct Kokkos_Profiling_SpaceHandle space, const char* label,
                           const void* ptr, const uint64_t size) {
  record("allocate_data\t%s\t%s\t%p\t%llu", space.name, label, ptr, (unsigned long long)size);
}

void kokkosp_deallocate_data(const struct Kokkos_Profiling_SpaceHandle space, const char* label,
                             const void* ptr, const uint64_t size) {
  record("deallocate_data\t%s\t%s\t%p\t%llu", space.name, label, ptr, (unsigned long long)size);
}

void kokkosp_begin_deep_copy(struct Kokkos_Profiling_SpaceHandle dst_space, const char* dst_label,
                             const void* dst_ptr, struct Kokkos_Profiling_SpaceHandle src_space,
                             const char* src_label, const void* src_ptr, uint64_t size) {
  record("begin_deep_copy\t%s\t%s\t%p\t%s\t%s\t%p\t%llu", dst_space.name, dst_label, dst_ptr,
         src_space.name, src_label, src_ptr, (unsigned long long)size);
}

void kokkosp_end_deep_copy(void) { record("end_deep_copy"); }

void kokkosp_create_profile_section(const char* name, uint32_t* id) {
  *id = next_section++;
  record("create_profile_section\t%s\t%u", name, *id);
}

void kokkosp_start_profile_section(const uint32_t id) { record("start_profile_section\t%u", id); }

void kokkosp_stop_profile_section(const uint32_t id) { record("stop_profile_section\t%u", id); }

void kokkosp_destroy_profile_section(const uint32_t id) { record("destroy_profile_section\t%u", id); }

void kokkosp_profile_event(const char* name) {
  record("profile_event\t%s", name);
  /* An event of this name asks the library for a fence through the programming interface. */
  if (strcmp(name, "tool fence") == 0 && interface.fence != NULL) {
    interface.fence(0);
    record("tool_fence_returned");
  }
}

void kokkosp_declare_metadata(const char* key, const char* value) {
  record("declare_metadata\t%s\t%s", key, value);
}

#endif
