/* A Vulkan layer that makes a device be lost mid-run, for tests (tests/vulkan_fault/__init__.py builds it).

   Everything passes through to the driver, except that a device counts its vkQueueSubmit calls and,
   after DS_VKFAULT_SUBMITS of them (or once the file named by DS_VKFAULT_TRIGGER exists), is lost:
   from then on vkQueueSubmit, vkQueueWaitIdle, vkDeviceWaitIdle, vkWaitForFences and vkGetFenceStatus
   on it return VK_ERROR_DEVICE_LOST without reaching the driver, as a real lost device does (the
   Vulkan spec's "Lost Device": those are the commands that report it, and waits must return in
   finite time). A device created later starts afresh. DS_VKFAULT_LOG=1 traces to stderr. At the moment
   of loss the driver finishes the work it already accepted (DS_VKFAULT_NO_DRAIN=1 skips that: see
   QueueSubmit).

   No Vulkan headers needed: the few types of the loader-layer interface are written out below from
   the Vulkan-Loader's vk_layer.h and the Vulkan registry (vulkan_core.h), only what this file uses. */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXPORT __attribute__((visibility("default"))) /* built with -fvisibility=hidden */
typedef int32_t VkResult;
typedef uint32_t VkBool32;
typedef int32_t VkStructureType;
typedef void *VkInstance, *VkPhysicalDevice, *VkDevice, *VkQueue; /* dispatchable handles */
typedef uint64_t VkFence;                                            /* non-dispatchable */
typedef void (*PFN_vkVoidFunction)(void);
typedef PFN_vkVoidFunction (*PFN_vkGetInstanceProcAddr)(VkInstance, const char *);
typedef PFN_vkVoidFunction (*PFN_vkGetDeviceProcAddr)(VkDevice, const char *);

#define VK_SUCCESS 0
#define VK_ERROR_INITIALIZATION_FAILED (-3)
#define VK_ERROR_DEVICE_LOST (-4)
#define VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO 47
#define VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO 48
#define VK_LAYER_LINK_INFO 0

typedef struct VkBaseInStructure {
    VkStructureType sType;
    const struct VkBaseInStructure *pNext;
} VkBaseInStructure;

typedef struct VkLayerInstanceLink_ {
    struct VkLayerInstanceLink_ *pNext;
    PFN_vkGetInstanceProcAddr pfnNextGetInstanceProcAddr;
    PFN_vkVoidFunction pfnNextGetPhysicalDeviceProcAddr;
} VkLayerInstanceLink;

typedef struct {
    VkStructureType sType; /* VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO */
    const void *pNext;
    int32_t function; /* VkLayerFunction */
    union {
        VkLayerInstanceLink *pLayerInfo;
        void *other;
    } u;
} VkLayerInstanceCreateInfo;

typedef struct VkLayerDeviceLink_ {
    struct VkLayerDeviceLink_ *pNext;
    PFN_vkGetInstanceProcAddr pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr pfnNextGetDeviceProcAddr;
} VkLayerDeviceLink;

typedef struct {
    VkStructureType sType; /* VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO */
    const void *pNext;
    int32_t function;
    union {
        VkLayerDeviceLink *pLayerInfo;
        void *other;
    } u;
} VkLayerDeviceCreateInfo;

typedef struct {
    int32_t sType; /* LAYER_NEGOTIATE_INTERFACE_STRUCT = 1 */
    void *pNext;
    uint32_t loaderLayerInterfaceVersion;
    PFN_vkGetInstanceProcAddr pfnGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr pfnGetDeviceProcAddr;
    PFN_vkVoidFunction pfnGetPhysicalDeviceProcAddr;
} VkNegotiateLayerInterface;

typedef VkResult (*PFN_vkCreateInstance)(const void *, const void *, VkInstance *);
typedef void (*PFN_vkDestroyInstance)(VkInstance, const void *);
typedef VkResult (*PFN_vkCreateDevice)(VkPhysicalDevice, const void *, const void *, VkDevice *);
typedef void (*PFN_vkDestroyDevice)(VkDevice, const void *);
typedef VkResult (*PFN_vkQueueSubmit)(VkQueue, uint32_t, const void *, VkFence);
typedef VkResult (*PFN_vkQueueWaitIdle)(VkQueue);
typedef VkResult (*PFN_vkDeviceWaitIdle)(VkDevice);
typedef VkResult (*PFN_vkWaitForFences)(VkDevice, uint32_t, const VkFence *, VkBool32, uint64_t);
typedef VkResult (*PFN_vkGetFenceStatus)(VkDevice, VkFence);
typedef void (*PFN_vkGetDeviceQueue)(VkDevice, uint32_t, uint32_t, VkQueue *);
typedef void (*PFN_vkGetDeviceQueue2)(VkDevice, const void *, VkQueue *);

/* A dispatchable handle starts with the loader's dispatch table pointer, the same for a device and
   its queues: the key layers use to find a queue's device. */
static void *key(void *dispatchable) { return *(void **)dispatchable; }

typedef struct {
    void *key;
    int number; /* 1 for the first device this process created */
    long submits;
    int lost;
    PFN_vkGetDeviceProcAddr gdpa;
    PFN_vkDestroyDevice destroy;
    PFN_vkQueueSubmit submit;
    PFN_vkQueueWaitIdle queue_wait_idle;
    PFN_vkDeviceWaitIdle device_wait_idle;
    PFN_vkWaitForFences wait_for_fences;
    PFN_vkGetFenceStatus get_fence_status;
    PFN_vkGetDeviceQueue get_queue;
    PFN_vkGetDeviceQueue2 get_queue2;
    VkQueue queues[16]; /* the queues it handed out, in case a queue's dispatch key differs */
} Device;

#define MAX_DEVICES 64
static Device devices[MAX_DEVICES];
static int devices_created;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static PFN_vkGetInstanceProcAddr next_gipa; /* the same loader terminator for every instance */
static PFN_vkDestroyInstance next_destroy_instance;
static VkInstance last_instance;

static int logging(void) {
    const char *v = getenv("DS_VKFAULT_LOG");
    return v && *v && strcmp(v, "0") != 0;
}

static Device *find(void *dispatchable) {
    void *k = key(dispatchable);
    for (int i = 0; i < MAX_DEVICES; i++) {
        if (!devices[i].key) continue;
        if (devices[i].key == k) return &devices[i];
        for (int q = 0; q < 16; q++)
            if (devices[i].queues[q] == dispatchable) return &devices[i];
    }
    return NULL;
}

static void remember_queue(Device *d, VkQueue queue) {
    for (int q = 0; d && queue && q < 16; q++) {
        if (d->queues[q] == queue) return;
        if (!d->queues[q]) {
            d->queues[q] = queue;
            return;
        }
    }
}

static void GetDeviceQueue(VkDevice device, uint32_t family, uint32_t index, VkQueue *queue) {
    Device *d = find(device);
    d->get_queue(device, family, index, queue);
    pthread_mutex_lock(&lock);
    remember_queue(d, *queue);
    pthread_mutex_unlock(&lock);
}

static void GetDeviceQueue2(VkDevice device, const void *info, VkQueue *queue) {
    Device *d = find(device);
    d->get_queue2(device, info, queue);
    pthread_mutex_lock(&lock);
    remember_queue(d, *queue);
    pthread_mutex_unlock(&lock);
}

/* Called with the lock held, on every submit: is it the one that loses the device? */
static int loses_now(Device *d) {
    const char *limit = getenv("DS_VKFAULT_SUBMITS");
    const char *trigger = getenv("DS_VKFAULT_TRIGGER");
    struct stat st;
    if (limit && *limit && d->submits >= atol(limit)) return 1;
    if (trigger && *trigger && stat(trigger, &st) == 0) return 1;
    return 0;
}

/* DS_VKFAULT_NO_DRAIN=1: report the loss while the driver may still run accepted work, and never wait
   for it, to reproduce the crash that motivated draining (docs/reliability.md). */
static int drain(void) {
    const char *v = getenv("DS_VKFAULT_NO_DRAIN");
    return !(v && strcmp(v, "1") == 0);
}

static VkResult lost(Device *d, const char *what) {
    if (logging()) fprintf(stderr, "vkfault: device %d lost: %s -> VK_ERROR_DEVICE_LOST\n", d->number, what);
    return VK_ERROR_DEVICE_LOST;
}

static VkResult QueueSubmit(VkQueue queue, uint32_t count, const void *submits, VkFence fence) {
    pthread_mutex_lock(&lock);
    Device *d = find(queue);
    int drained = d && d->lost;
    int is_lost = d && (d->lost || (d->lost = loses_now(d)));
    if (d && !is_lost) d->submits++;
    pthread_mutex_unlock(&lock);
    if (!d) { /* a queue of no device this layer saw created: should not happen */
        fprintf(stderr, "vkfault: vkQueueSubmit on an unknown queue\n");
        return VK_ERROR_DEVICE_LOST;
    }
    if (is_lost) {
        /* The submits before this one were real and the driver may still be running them. A real lost
           device has stopped (the kernel reset it), so the app may free their memory at once; let the
           driver finish first, or SwiftShader's threads run on in memory Dawn has already freed. */
        if (!drained && drain()) d->queue_wait_idle(queue);
        return lost(d, "vkQueueSubmit");
    }
    if (logging()) fprintf(stderr, "vkfault: device %d submit %ld\n", d->number, d->submits);
    return d->submit(queue, count, submits, fence);
}

static VkResult QueueWaitIdle(VkQueue queue) {
    Device *d = find(queue);
    if (d->lost) { /* nothing runs any more once lost (see QueueSubmit): the driver returns at once */
        if (drain()) d->queue_wait_idle(queue);
        return lost(d, "vkQueueWaitIdle");
    }
    return d->queue_wait_idle(queue);
}

static VkResult DeviceWaitIdle(VkDevice device) {
    Device *d = find(device);
    if (d->lost) {
        if (drain()) d->device_wait_idle(device);
        return lost(d, "vkDeviceWaitIdle");
    }
    return d->device_wait_idle(device);
}

static VkResult WaitForFences(VkDevice device, uint32_t n, const VkFence *fences, VkBool32 all,
                                         uint64_t timeout) {
    Device *d = find(device);
    if (d->lost) return lost(d, "vkWaitForFences");
    return d->wait_for_fences(device, n, fences, all, timeout);
}

static VkResult GetFenceStatus(VkDevice device, VkFence fence) {
    Device *d = find(device);
    if (d->lost) return lost(d, "vkGetFenceStatus");
    return d->get_fence_status(device, fence);
}

static void DestroyDevice(VkDevice device, const void *allocator) {
    pthread_mutex_lock(&lock);
    Device *d = find(device);
    PFN_vkDestroyDevice destroy = d ? d->destroy : NULL;
    if (d && logging()) fprintf(stderr, "vkfault: device %d destroyed after %ld submits\n", d->number, d->submits);
    if (d) memset(d, 0, sizeof *d);
    pthread_mutex_unlock(&lock);
    if (destroy) destroy(device, allocator);
}

EXPORT PFN_vkVoidFunction vkGetDeviceProcAddr(VkDevice device, const char *name);
EXPORT PFN_vkVoidFunction vkGetInstanceProcAddr(VkInstance instance, const char *name);

static VkResult CreateDevice(VkPhysicalDevice physical, const void *info, const void *allocator,
                                        VkDevice *out) {
    VkLayerDeviceCreateInfo *link = (VkLayerDeviceCreateInfo *)((const VkBaseInStructure *)info)->pNext;
    while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
        link = (VkLayerDeviceCreateInfo *)link->pNext;
    if (!link) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    link->u.pLayerInfo = link->u.pLayerInfo->pNext; /* the next layer finds its own link */
    /* NULL instance, as the loader's layer guide does; the last instance if the next layer wants one */
    PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(NULL, "vkCreateDevice");
    if (!create) create = (PFN_vkCreateDevice)gipa(last_instance, "vkCreateDevice");
    if (!create) return VK_ERROR_INITIALIZATION_FAILED;
    VkResult result = create(physical, info, allocator, out);
    if (result != VK_SUCCESS) return result;
    pthread_mutex_lock(&lock);
    Device *d = find(*out);
    for (int i = 0; !d && i < MAX_DEVICES; i++)
        if (!devices[i].key) d = &devices[i];
    if (d) {
        memset(d, 0, sizeof *d);
        d->key = key(*out);
        d->number = ++devices_created;
        d->gdpa = gdpa;
        d->destroy = (PFN_vkDestroyDevice)gdpa(*out, "vkDestroyDevice");
        d->submit = (PFN_vkQueueSubmit)gdpa(*out, "vkQueueSubmit");
        d->queue_wait_idle = (PFN_vkQueueWaitIdle)gdpa(*out, "vkQueueWaitIdle");
        d->device_wait_idle = (PFN_vkDeviceWaitIdle)gdpa(*out, "vkDeviceWaitIdle");
        d->wait_for_fences = (PFN_vkWaitForFences)gdpa(*out, "vkWaitForFences");
        d->get_fence_status = (PFN_vkGetFenceStatus)gdpa(*out, "vkGetFenceStatus");
        d->get_queue = (PFN_vkGetDeviceQueue)gdpa(*out, "vkGetDeviceQueue");
        d->get_queue2 = (PFN_vkGetDeviceQueue2)gdpa(*out, "vkGetDeviceQueue2");
        if (logging()) fprintf(stderr, "vkfault: device %d created\n", d->number);
    }
    pthread_mutex_unlock(&lock);
    if (!d) { /* more live devices than the table holds: refuse rather than run unwatched */
        ((PFN_vkDestroyDevice)gdpa(*out, "vkDestroyDevice"))(*out, allocator);
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    return VK_SUCCESS;
}

static VkResult CreateInstance(const void *info, const void *allocator, VkInstance *out) {
    VkLayerInstanceCreateInfo *link = (VkLayerInstanceCreateInfo *)((const VkBaseInStructure *)info)->pNext;
    while (link &&
           !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
        link = (VkLayerInstanceCreateInfo *)link->pNext;
    if (!link) return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    link->u.pLayerInfo = link->u.pLayerInfo->pNext;
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
    VkResult result = create(info, allocator, out);
    if (result == VK_SUCCESS) {
        next_gipa = gipa;
        next_destroy_instance = (PFN_vkDestroyInstance)gipa(*out, "vkDestroyInstance");
        last_instance = *out;
    }
    return result;
}

static void DestroyInstance(VkInstance instance, const void *allocator) {
    if (instance == last_instance) last_instance = NULL;
    next_destroy_instance(instance, allocator);
}

static PFN_vkVoidFunction device_function(const char *name) {
    static const struct {
        const char *name;
        PFN_vkVoidFunction fn;
    } table[] = {
        {"vkGetDeviceProcAddr", (PFN_vkVoidFunction)vkGetDeviceProcAddr},
        {"vkDestroyDevice", (PFN_vkVoidFunction)DestroyDevice},
        {"vkQueueSubmit", (PFN_vkVoidFunction)QueueSubmit},
        {"vkQueueWaitIdle", (PFN_vkVoidFunction)QueueWaitIdle},
        {"vkDeviceWaitIdle", (PFN_vkVoidFunction)DeviceWaitIdle},
        {"vkWaitForFences", (PFN_vkVoidFunction)WaitForFences},
        {"vkGetFenceStatus", (PFN_vkVoidFunction)GetFenceStatus},
        {"vkGetDeviceQueue", (PFN_vkVoidFunction)GetDeviceQueue},
        {"vkGetDeviceQueue2", (PFN_vkVoidFunction)GetDeviceQueue2},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0) return table[i].fn;
    return NULL;
}

EXPORT PFN_vkVoidFunction vkGetDeviceProcAddr(VkDevice device, const char *name) {
    PFN_vkVoidFunction fn = device_function(name);
    if (fn) return fn;
    pthread_mutex_lock(&lock);
    Device *d = find(device);
    PFN_vkGetDeviceProcAddr gdpa = d ? d->gdpa : NULL;
    pthread_mutex_unlock(&lock);
    return gdpa ? gdpa(device, name) : NULL;
}

EXPORT PFN_vkVoidFunction vkGetInstanceProcAddr(VkInstance instance, const char *name) {
    if (strcmp(name, "vkGetInstanceProcAddr") == 0) return (PFN_vkVoidFunction)vkGetInstanceProcAddr;
    if (strcmp(name, "vkCreateInstance") == 0) return (PFN_vkVoidFunction)CreateInstance;
    if (strcmp(name, "vkDestroyInstance") == 0) return (PFN_vkVoidFunction)DestroyInstance;
    if (strcmp(name, "vkCreateDevice") == 0) return (PFN_vkVoidFunction)CreateDevice;
    PFN_vkVoidFunction fn = device_function(name);
    if (fn) return fn;
    return next_gipa ? next_gipa(instance, name) : NULL;
}

EXPORT VkResult vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v) {
    if (v->loaderLayerInterfaceVersion > 2) v->loaderLayerInterfaceVersion = 2;
    v->pfnGetInstanceProcAddr = vkGetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = vkGetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}
