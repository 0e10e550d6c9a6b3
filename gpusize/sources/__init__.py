"""The only I/O: catalogs (YAML), config.json files, model resolution (path > catalog > Hub), the Hub,
safetensors headers, GGUF files and this machine's GPUs. Everything here returns core values or plain
data; nothing prints (progress is a context manager the caller passes in)."""
