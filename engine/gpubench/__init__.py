"""The optional real-device benchmark for Day 37, in torch.

torch is imported only inside this package, and this package is imported only by
``python -m engine bench`` (engine/commands/bench.py) and by its tests, so a build never needs torch.

One idea per module, in the manner of gpt-fast and nano-vllm:

- shapes: the model shapes the benchmark knows (``tiny``, ``7b-class``) and catalog ones (no torch);
- model: a Llama-shaped decoder with random seeded weights and a static KV cache;
- device: which device, its name, slug and memory, synchronisation, the catalog's HBM peak;
- memory: how many requests of each context really fit after the weights are loaded;
- steptime: decode step time against batch and context, and the bandwidth it achieves;
- batching: static vs continuous batching run on the model with the day's workload;
- runner: the three phases in order, with a progress bar, into one measurement document.
"""
