/*
 * The GPU's clocks, temperature and power as it runs, read with NVML, the
 * driver's management library, loaded at run time as the driver is: a
 * record of a run says at what clocks its timings were taken, at its start
 * and at its end, where the rated clocks the driver reports say nothing
 * of boost, throttling or a locked clock.  Without NVML (no library, a
 * build without its header, a device NVML does not find) the reading
 * says why, and no number is made up.
 */
#include "gpu_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef TESSEL_HAVE_NVML
#include <nvml.h>

typedef struct {
  void *lib;
  __typeof__(&nvmlInit_v2) init;
  __typeof__(&nvmlShutdown) shutdown;
  __typeof__(&nvmlErrorString) error;
  __typeof__(&nvmlDeviceGetHandleByPciBusId_v2) by_bus;
  __typeof__(&nvmlDeviceGetClockInfo) clock;
  __typeof__(&nvmlDeviceGetTemperature) temperature;
  __typeof__(&nvmlDeviceGetPowerUsage) power;
} nvml_api;

/* TESSEL_NVML names another library (a test's); else the driver's. */
static bool load(nvml_api *n, ts_gpu_sensors *out) {
  const char *name = getenv("TESSEL_NVML");
  n->lib = dlopen(name && *name ? name : "libnvidia-ml.so.1",
                  RTLD_NOW | RTLD_LOCAL);
  if (!n->lib) {
    snprintf(out->why, sizeof(out->why), "NVML not loaded: %s", dlerror());
    return false;
  }
  *(void **)&n->init = dlsym(n->lib, "nvmlInit_v2");
  *(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
  *(void **)&n->error = dlsym(n->lib, "nvmlErrorString");
  *(void **)&n->by_bus = dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
  *(void **)&n->clock = dlsym(n->lib, "nvmlDeviceGetClockInfo");
  *(void **)&n->temperature = dlsym(n->lib, "nvmlDeviceGetTemperature");
  *(void **)&n->power = dlsym(n->lib, "nvmlDeviceGetPowerUsage");
  if (n->init && n->shutdown && n->error && n->by_bus && n->clock &&
      n->temperature && n->power)
    return true;
  snprintf(out->why, sizeof(out->why), "NVML lacks a function tessel uses");
  dlclose(n->lib);
  return false;
}

static bool nvml_ok(const nvml_api *n, nvmlReturn_t r, const char *call,
                    ts_gpu_sensors *out) {
  if (r == NVML_SUCCESS)
    return true;
  snprintf(out->why, sizeof(out->why), "%s: %s", call, n->error(r));
  return false;
}

/* The device's PCI address as NVML spells it: "00000000:41:00.0". */
static bool bus_id(ts_gpu *g, char *id, size_t len) {
  int dom = 0, bus = 0, dev = 0;
  bool ok = GPU_CALL(g, cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, g->dev)) &&
            GPU_CALL(g, cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, g->dev)) &&
            GPU_CALL(g, cuDeviceGetAttribute(&dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, g->dev));
  snprintf(id, len, "%08x:%02x:%02x.0", (unsigned)dom, (unsigned)bus,
           (unsigned)dev);
  return ok;
}

static void read_device(const nvml_api *n, ts_gpu *g, ts_gpu_sensors *out) {
  char id[32];
  nvmlDevice_t d;
  unsigned sm, mem, temp, mw;
  if (!bus_id(g, id, sizeof(id))) {
    snprintf(out->why, sizeof(out->why), "the device's PCI address: %s",
             ts_gpu_errmsg(g));
    return;
  }
  if (!nvml_ok(n, n->by_bus(id, &d), "nvmlDeviceGetHandleByPciBusId", out) ||
      !nvml_ok(n, n->clock(d, NVML_CLOCK_SM, &sm), "nvmlDeviceGetClockInfo",
               out) ||
      !nvml_ok(n, n->clock(d, NVML_CLOCK_MEM, &mem), "nvmlDeviceGetClockInfo",
               out) ||
      !nvml_ok(n, n->temperature(d, NVML_TEMPERATURE_GPU, &temp),
               "nvmlDeviceGetTemperature", out) ||
      !nvml_ok(n, n->power(d, &mw), "nvmlDeviceGetPowerUsage", out))
    return;
  *out = (ts_gpu_sensors){.valid = true, .sm_mhz = (int)sm,
                          .memory_mhz = (int)mem, .temperature_c = (int)temp,
                          .power_w = mw / 1000.0};
}

ts_gpu_sensors ts_gpu_read_sensors(ts_gpu *g) {
  ts_gpu_sensors out = {.valid = false};
  nvml_api n;
  if (!g || ts_gpu_status(g) != TS_OK) {
    snprintf(out.why, sizeof(out.why), "no GPU");
    return out;
  }
  if (!load(&n, &out))
    return out;
  if (nvml_ok(&n, n.init(), "nvmlInit", &out)) {
    read_device(&n, g, &out);
    n.shutdown();
  }
  dlclose(n.lib);
  return out;
}

#else /* built without nvml.h */

ts_gpu_sensors ts_gpu_read_sensors(ts_gpu *g) {
  (void)g;
  ts_gpu_sensors out = {.valid = false};
  snprintf(out.why, sizeof(out.why), "tessel was built without nvml.h "
           "(scripts/setup.sh fetches it)");
  return out;
}

#endif
