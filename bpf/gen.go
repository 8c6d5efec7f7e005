package bpf

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -nostdinc -Iinclude" -target bpfel -type cac_stats -type cac_settings -type cac_ports -type cac_limits -type cac_buckets -type cac_limit -type cac_prefix -type cac_account -type cac_source -type cac_reject_key -type cac_reject -type cac_inputs -type cac_charge_ring -type cac_admission -type cac_agent -type cac_l2tp_key -type cac_l2tp_tunnel Xdp xdp_cac.c
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -nostdinc -Iinclude" -target bpfel Tc tc_dialogs.c
