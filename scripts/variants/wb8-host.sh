# Issue 16: the 8-byte write-back (wb8-lone.sh) wherever the packets are in pinned host memory, eager calls
# included (a branch on a.host_memory in the plain LL kernel: its device-memory code may change with it).
bash "$(dirname "${BASH_SOURCE[0]}")/wb8-lone.sh"
sed -i '/^                if (LONE)$/{N;s/if (LONE)\n\( *ll_store8\)/if (a.host_memory)\n\1/}' cuda/oneshot.cu
grep -q -A1 'if (a.host_memory)$' cuda/oneshot.cu
