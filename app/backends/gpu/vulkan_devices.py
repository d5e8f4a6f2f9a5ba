"""List the Vulkan devices this process can see, straight from the Vulkan loader (ctypes).

LiteRT's GPU accelerator on Linux and Windows runs on WebGPU (Dawn) over Vulkan
and does not say which adapter it picked. Vulkan itself does: every physical
device reports a name and a type, and type CPU means a software renderer
(llvmpipe/lavapipe, SwiftShader) that would run "GPU" work on the CPU.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from dataclasses import dataclass

from app.system.native_log import capture_stderr

# VkPhysicalDeviceType
_TYPES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
# Dawn asks for a high-performance adapter: discrete first, a CPU device last.
_PREFERENCE = {"discrete GPU": 0, "integrated GPU": 1, "virtual GPU": 2, "other": 3, "CPU": 4}
SOFTWARE_NAMES = ("llvmpipe", "lavapipe", "swiftshader", "softpipe", "microsoft basic render")
_VK_SUCCESS = 0
_PROPERTIES_BYTES = 4096  # VkPhysicalDeviceProperties is ~824 bytes; only its head is read


@dataclass(frozen=True)
class VulkanDevice:
    name: str
    kind: str  # one of _TYPES' values
    vendor_id: int
    api_version: str

    @property
    def software(self) -> bool:
        return self.kind == "CPU" or any(s in self.name.lower() for s in SOFTWARE_NAMES)

    def describe(self) -> str:
        return f"{self.name} ({self.kind}, Vulkan {self.api_version})"


class _AppInfo(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("pApplicationName", ctypes.c_char_p),
        ("applicationVersion", ctypes.c_uint32),
        ("pEngineName", ctypes.c_char_p),
        ("engineVersion", ctypes.c_uint32),
        ("apiVersion", ctypes.c_uint32),
    ]


class _InstanceInfo(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("flags", ctypes.c_uint32),
        ("pApplicationInfo", ctypes.POINTER(_AppInfo)),
        ("enabledLayerCount", ctypes.c_uint32),
        ("ppEnabledLayerNames", ctypes.c_void_p),
        ("enabledExtensionCount", ctypes.c_uint32),
        ("ppEnabledExtensionNames", ctypes.c_void_p),
    ]


def _loader() -> ctypes.CDLL | None:
    names = ["vulkan-1.dll"] if sys.platform == "win32" else ["libvulkan.so.1", ctypes.util.find_library("vulkan")]
    for name in filter(None, names):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _version(v: int) -> str:
    return f"{(v >> 22) & 0x7F}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


def list_devices() -> tuple[list[VulkanDevice], str | None]:
    """(devices, problem): problem says why the list is empty when Vulkan itself is missing or fails."""
    if sys.platform == "darwin":
        return [], "macOS has no Vulkan: LiteRT uses Metal there"
    vk = _loader()
    if vk is None:
        name = "vulkan-1.dll" if sys.platform == "win32" else "libvulkan.so.1"  # this platform's only
        return [], f"the Vulkan loader ({name}) is not installed"
    app = _AppInfo(0, None, b"delegate-scope", 1, b"delegate-scope", 1, (1 << 22) | (1 << 12))
    info = _InstanceInfo(1, None, 0, ctypes.pointer(app), 0, None, 0, None)
    instance = ctypes.c_void_p()
    with capture_stderr():  # ICDs print their own complaints (XDG_RUNTIME_DIR, ...) to fd 2
        result = vk.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(instance))
        if result != _VK_SUCCESS:
            return [], f"Vulkan instance creation failed (VkResult {result}): no usable Vulkan driver"
        try:
            count = ctypes.c_uint32(0)
            vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None)
            handles = (ctypes.c_void_p * count.value)()
            vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), handles)
            devices = []
            for handle in handles[: count.value]:
                props = ctypes.create_string_buffer(_PROPERTIES_BYTES)
                vk.vkGetPhysicalDeviceProperties(ctypes.c_void_p(handle), props)
                api, _driver, vendor, _device, kind = (
                    int.from_bytes(props.raw[i : i + 4], "little") for i in range(0, 20, 4)
                )
                name = props.raw[20:276].split(b"\0", 1)[0].decode("utf-8", errors="replace")
                devices.append(VulkanDevice(name, _TYPES.get(kind, "other"), vendor, _version(api)))
        finally:
            vk.vkDestroyInstance(instance, None)
    return devices, None if devices else "Vulkan found no physical device"


def preferred(devices: list[VulkanDevice]) -> VulkanDevice | None:
    """The device a high-performance WebGPU adapter request lands on."""
    return min(devices, key=lambda d: _PREFERENCE[d.kind], default=None)
