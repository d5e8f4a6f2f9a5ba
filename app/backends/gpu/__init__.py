"""The GPU backend (LiteRT's GPU accelerator through its C API), its probe child and Vulkan device listing."""
