"""B-tree against LSM tree: lookups by page depth."""

print("B-tree vs LSM")
print("keys: 10,000")  # a figure named as a mapping's method: f.keys is the figure
print("write amplification (lsm): 12.5 x")
print("reads per lookup (btree): 3")
print("p50 lookup: 1,234 ns")
print()
print("depth  btree_us  lsm_us")
print("-----  --------  ------")
for d in range(1, 10):  # more rows than a post quotes whole
    print(f"{d:<5}  {1.5 * d:<8}  {2.5 * d + 1:<6}")
