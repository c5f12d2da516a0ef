# Sourced by the produce scripts (replicated.sh, single-node.sh), after cpu.sh.
#   recycle_pages DIR BYTES   writes BYTES of zeros to a scratch file in DIR through the
#                             page cache and deletes it, and prints the CPU ms per MiB the
#                             writes cost
#
# Why: on a VM whose free memory is handed back to the host (virtio-balloon free page
# reporting, as on machine A), a write into a page the host must supply again costs
# several times a write into a page freed moments ago, and which of the two a run meets
# depends on what the machine freed before it (docs/benchmarks.md, "What a page costs on
# machine A"). A run preceded by recycle_pages of at least the bytes it writes takes pages just
# freed, as the page cache of a host whose memory is full reuses the pages it reclaims;
# every run compared in a table gets the same treatment. Calling it twice in a row shows
# both costs: the first call's pages come from the free memory as it was, the second's
# are the first's, just freed.
recycle_pages() {
  local dir=$1 mib=$(( ($2 + 1048575) >> 20 ))
  cpu_run "$dir/recycle.cpu" dd if=/dev/zero of="$dir/recycle.scratch" bs=1M count="$mib" status=none
  rm -f "$dir/recycle.scratch"
  python3 -c "print(round($(cat "$dir/recycle.cpu") * 1000 / $mib, 3))"
}
