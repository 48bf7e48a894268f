package insn

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Helper is a BPF helper function id (enum bpf_func_id), the imm of a
// BPF_CALL instruction whose src_reg is 0.
type Helper int32

// Helper ids, positional as in the kernel's ___BPF_FUNC_MAPPER (6.1 uapi
// header, plus the two cgroup storage helpers added in 6.2).
const (
	BPF_FUNC_unspec                         Helper = iota // 0: bpf_unspec
	BPF_FUNC_map_lookup_elem                              // 1: bpf_map_lookup_elem
	BPF_FUNC_map_update_elem                              // 2: bpf_map_update_elem
	BPF_FUNC_map_delete_elem                              // 3: bpf_map_delete_elem
	BPF_FUNC_probe_read                                   // 4: bpf_probe_read
	BPF_FUNC_ktime_get_ns                                 // 5: bpf_ktime_get_ns
	BPF_FUNC_trace_printk                                 // 6: bpf_trace_printk
	BPF_FUNC_get_prandom_u32                              // 7: bpf_get_prandom_u32
	BPF_FUNC_get_smp_processor_id                         // 8: bpf_get_smp_processor_id
	BPF_FUNC_skb_store_bytes                              // 9: bpf_skb_store_bytes
	BPF_FUNC_l3_csum_replace                              // 10: bpf_l3_csum_replace
	BPF_FUNC_l4_csum_replace                              // 11: bpf_l4_csum_replace
	BPF_FUNC_tail_call                                    // 12: bpf_tail_call
	BPF_FUNC_clone_redirect                               // 13: bpf_clone_redirect
	BPF_FUNC_get_current_pid_tgid                         // 14: bpf_get_current_pid_tgid
	BPF_FUNC_get_current_uid_gid                          // 15: bpf_get_current_uid_gid
	BPF_FUNC_get_current_comm                             // 16: bpf_get_current_comm
	BPF_FUNC_get_cgroup_classid                           // 17: bpf_get_cgroup_classid
	BPF_FUNC_skb_vlan_push                                // 18: bpf_skb_vlan_push
	BPF_FUNC_skb_vlan_pop                                 // 19: bpf_skb_vlan_pop
	BPF_FUNC_skb_get_tunnel_key                           // 20: bpf_skb_get_tunnel_key
	BPF_FUNC_skb_set_tunnel_key                           // 21: bpf_skb_set_tunnel_key
	BPF_FUNC_perf_event_read                              // 22: bpf_perf_event_read
	BPF_FUNC_redirect                                     // 23: bpf_redirect
	BPF_FUNC_get_route_realm                              // 24: bpf_get_route_realm
	BPF_FUNC_perf_event_output                            // 25: bpf_perf_event_output
	BPF_FUNC_skb_load_bytes                               // 26: bpf_skb_load_bytes
	BPF_FUNC_get_stackid                                  // 27: bpf_get_stackid
	BPF_FUNC_csum_diff                                    // 28: bpf_csum_diff
	BPF_FUNC_skb_get_tunnel_opt                           // 29: bpf_skb_get_tunnel_opt
	BPF_FUNC_skb_set_tunnel_opt                           // 30: bpf_skb_set_tunnel_opt
	BPF_FUNC_skb_change_proto                             // 31: bpf_skb_change_proto
	BPF_FUNC_skb_change_type                              // 32: bpf_skb_change_type
	BPF_FUNC_skb_under_cgroup                             // 33: bpf_skb_under_cgroup
	BPF_FUNC_get_hash_recalc                              // 34: bpf_get_hash_recalc
	BPF_FUNC_get_current_task                             // 35: bpf_get_current_task
	BPF_FUNC_probe_write_user                             // 36: bpf_probe_write_user
	BPF_FUNC_current_task_under_cgroup                    // 37: bpf_current_task_under_cgroup
	BPF_FUNC_skb_change_tail                              // 38: bpf_skb_change_tail
	BPF_FUNC_skb_pull_data                                // 39: bpf_skb_pull_data
	BPF_FUNC_csum_update                                  // 40: bpf_csum_update
	BPF_FUNC_set_hash_invalid                             // 41: bpf_set_hash_invalid
	BPF_FUNC_get_numa_node_id                             // 42: bpf_get_numa_node_id
	BPF_FUNC_skb_change_head                              // 43: bpf_skb_change_head
	BPF_FUNC_xdp_adjust_head                              // 44: bpf_xdp_adjust_head
	BPF_FUNC_probe_read_str                               // 45: bpf_probe_read_str
	BPF_FUNC_get_socket_cookie                            // 46: bpf_get_socket_cookie
	BPF_FUNC_get_socket_uid                               // 47: bpf_get_socket_uid
	BPF_FUNC_set_hash                                     // 48: bpf_set_hash
	BPF_FUNC_setsockopt                                   // 49: bpf_setsockopt
	BPF_FUNC_skb_adjust_room                              // 50: bpf_skb_adjust_room
	BPF_FUNC_redirect_map                                 // 51: bpf_redirect_map
	BPF_FUNC_sk_redirect_map                              // 52: bpf_sk_redirect_map
	BPF_FUNC_sock_map_update                              // 53: bpf_sock_map_update
	BPF_FUNC_xdp_adjust_meta                              // 54: bpf_xdp_adjust_meta
	BPF_FUNC_perf_event_read_value                        // 55: bpf_perf_event_read_value
	BPF_FUNC_perf_prog_read_value                         // 56: bpf_perf_prog_read_value
	BPF_FUNC_getsockopt                                   // 57: bpf_getsockopt
	BPF_FUNC_override_return                              // 58: bpf_override_return
	BPF_FUNC_sock_ops_cb_flags_set                        // 59: bpf_sock_ops_cb_flags_set
	BPF_FUNC_msg_redirect_map                             // 60: bpf_msg_redirect_map
	BPF_FUNC_msg_apply_bytes                              // 61: bpf_msg_apply_bytes
	BPF_FUNC_msg_cork_bytes                               // 62: bpf_msg_cork_bytes
	BPF_FUNC_msg_pull_data                                // 63: bpf_msg_pull_data
	BPF_FUNC_bind                                         // 64: bpf_bind
	BPF_FUNC_xdp_adjust_tail                              // 65: bpf_xdp_adjust_tail
	BPF_FUNC_skb_get_xfrm_state                           // 66: bpf_skb_get_xfrm_state
	BPF_FUNC_get_stack                                    // 67: bpf_get_stack
	BPF_FUNC_skb_load_bytes_relative                      // 68: bpf_skb_load_bytes_relative
	BPF_FUNC_fib_lookup                                   // 69: bpf_fib_lookup
	BPF_FUNC_sock_hash_update                             // 70: bpf_sock_hash_update
	BPF_FUNC_msg_redirect_hash                            // 71: bpf_msg_redirect_hash
	BPF_FUNC_sk_redirect_hash                             // 72: bpf_sk_redirect_hash
	BPF_FUNC_lwt_push_encap                               // 73: bpf_lwt_push_encap
	BPF_FUNC_lwt_seg6_store_bytes                         // 74: bpf_lwt_seg6_store_bytes
	BPF_FUNC_lwt_seg6_adjust_srh                          // 75: bpf_lwt_seg6_adjust_srh
	BPF_FUNC_lwt_seg6_action                              // 76: bpf_lwt_seg6_action
	BPF_FUNC_rc_repeat                                    // 77: bpf_rc_repeat
	BPF_FUNC_rc_keydown                                   // 78: bpf_rc_keydown
	BPF_FUNC_skb_cgroup_id                                // 79: bpf_skb_cgroup_id
	BPF_FUNC_get_current_cgroup_id                        // 80: bpf_get_current_cgroup_id
	BPF_FUNC_get_local_storage                            // 81: bpf_get_local_storage
	BPF_FUNC_sk_select_reuseport                          // 82: bpf_sk_select_reuseport
	BPF_FUNC_skb_ancestor_cgroup_id                       // 83: bpf_skb_ancestor_cgroup_id
	BPF_FUNC_sk_lookup_tcp                                // 84: bpf_sk_lookup_tcp
	BPF_FUNC_sk_lookup_udp                                // 85: bpf_sk_lookup_udp
	BPF_FUNC_sk_release                                   // 86: bpf_sk_release
	BPF_FUNC_map_push_elem                                // 87: bpf_map_push_elem
	BPF_FUNC_map_pop_elem                                 // 88: bpf_map_pop_elem
	BPF_FUNC_map_peek_elem                                // 89: bpf_map_peek_elem
	BPF_FUNC_msg_push_data                                // 90: bpf_msg_push_data
	BPF_FUNC_msg_pop_data                                 // 91: bpf_msg_pop_data
	BPF_FUNC_rc_pointer_rel                               // 92: bpf_rc_pointer_rel
	BPF_FUNC_spin_lock                                    // 93: bpf_spin_lock
	BPF_FUNC_spin_unlock                                  // 94: bpf_spin_unlock
	BPF_FUNC_sk_fullsock                                  // 95: bpf_sk_fullsock
	BPF_FUNC_tcp_sock                                     // 96: bpf_tcp_sock
	BPF_FUNC_skb_ecn_set_ce                               // 97: bpf_skb_ecn_set_ce
	BPF_FUNC_get_listener_sock                            // 98: bpf_get_listener_sock
	BPF_FUNC_skc_lookup_tcp                               // 99: bpf_skc_lookup_tcp
	BPF_FUNC_tcp_check_syncookie                          // 100: bpf_tcp_check_syncookie
	BPF_FUNC_sysctl_get_name                              // 101: bpf_sysctl_get_name
	BPF_FUNC_sysctl_get_current_value                     // 102: bpf_sysctl_get_current_value
	BPF_FUNC_sysctl_get_new_value                         // 103: bpf_sysctl_get_new_value
	BPF_FUNC_sysctl_set_new_value                         // 104: bpf_sysctl_set_new_value
	BPF_FUNC_strtol                                       // 105: bpf_strtol
	BPF_FUNC_strtoul                                      // 106: bpf_strtoul
	BPF_FUNC_sk_storage_get                               // 107: bpf_sk_storage_get
	BPF_FUNC_sk_storage_delete                            // 108: bpf_sk_storage_delete
	BPF_FUNC_send_signal                                  // 109: bpf_send_signal
	BPF_FUNC_tcp_gen_syncookie                            // 110: bpf_tcp_gen_syncookie
	BPF_FUNC_skb_output                                   // 111: bpf_skb_output
	BPF_FUNC_probe_read_user                              // 112: bpf_probe_read_user
	BPF_FUNC_probe_read_kernel                            // 113: bpf_probe_read_kernel
	BPF_FUNC_probe_read_user_str                          // 114: bpf_probe_read_user_str
	BPF_FUNC_probe_read_kernel_str                        // 115: bpf_probe_read_kernel_str
	BPF_FUNC_tcp_send_ack                                 // 116: bpf_tcp_send_ack
	BPF_FUNC_send_signal_thread                           // 117: bpf_send_signal_thread
	BPF_FUNC_jiffies64                                    // 118: bpf_jiffies64
	BPF_FUNC_read_branch_records                          // 119: bpf_read_branch_records
	BPF_FUNC_get_ns_current_pid_tgid                      // 120: bpf_get_ns_current_pid_tgid
	BPF_FUNC_xdp_output                                   // 121: bpf_xdp_output
	BPF_FUNC_get_netns_cookie                             // 122: bpf_get_netns_cookie
	BPF_FUNC_get_current_ancestor_cgroup_id               // 123: bpf_get_current_ancestor_cgroup_id
	BPF_FUNC_sk_assign                                    // 124: bpf_sk_assign
	BPF_FUNC_ktime_get_boot_ns                            // 125: bpf_ktime_get_boot_ns
	BPF_FUNC_seq_printf                                   // 126: bpf_seq_printf
	BPF_FUNC_seq_write                                    // 127: bpf_seq_write
	BPF_FUNC_sk_cgroup_id                                 // 128: bpf_sk_cgroup_id
	BPF_FUNC_sk_ancestor_cgroup_id                        // 129: bpf_sk_ancestor_cgroup_id
	BPF_FUNC_ringbuf_output                               // 130: bpf_ringbuf_output
	BPF_FUNC_ringbuf_reserve                              // 131: bpf_ringbuf_reserve
	BPF_FUNC_ringbuf_submit                               // 132: bpf_ringbuf_submit
	BPF_FUNC_ringbuf_discard                              // 133: bpf_ringbuf_discard
	BPF_FUNC_ringbuf_query                                // 134: bpf_ringbuf_query
	BPF_FUNC_csum_level                                   // 135: bpf_csum_level
	BPF_FUNC_skc_to_tcp6_sock                             // 136: bpf_skc_to_tcp6_sock
	BPF_FUNC_skc_to_tcp_sock                              // 137: bpf_skc_to_tcp_sock
	BPF_FUNC_skc_to_tcp_timewait_sock                     // 138: bpf_skc_to_tcp_timewait_sock
	BPF_FUNC_skc_to_tcp_request_sock                      // 139: bpf_skc_to_tcp_request_sock
	BPF_FUNC_skc_to_udp6_sock                             // 140: bpf_skc_to_udp6_sock
	BPF_FUNC_get_task_stack                               // 141: bpf_get_task_stack
	BPF_FUNC_load_hdr_opt                                 // 142: bpf_load_hdr_opt
	BPF_FUNC_store_hdr_opt                                // 143: bpf_store_hdr_opt
	BPF_FUNC_reserve_hdr_opt                              // 144: bpf_reserve_hdr_opt
	BPF_FUNC_inode_storage_get                            // 145: bpf_inode_storage_get
	BPF_FUNC_inode_storage_delete                         // 146: bpf_inode_storage_delete
	BPF_FUNC_d_path                                       // 147: bpf_d_path
	BPF_FUNC_copy_from_user                               // 148: bpf_copy_from_user
	BPF_FUNC_snprintf_btf                                 // 149: bpf_snprintf_btf
	BPF_FUNC_seq_printf_btf                               // 150: bpf_seq_printf_btf
	BPF_FUNC_skb_cgroup_classid                           // 151: bpf_skb_cgroup_classid
	BPF_FUNC_redirect_neigh                               // 152: bpf_redirect_neigh
	BPF_FUNC_per_cpu_ptr                                  // 153: bpf_per_cpu_ptr
	BPF_FUNC_this_cpu_ptr                                 // 154: bpf_this_cpu_ptr
	BPF_FUNC_redirect_peer                                // 155: bpf_redirect_peer
	BPF_FUNC_task_storage_get                             // 156: bpf_task_storage_get
	BPF_FUNC_task_storage_delete                          // 157: bpf_task_storage_delete
	BPF_FUNC_get_current_task_btf                         // 158: bpf_get_current_task_btf
	BPF_FUNC_bprm_opts_set                                // 159: bpf_bprm_opts_set
	BPF_FUNC_ktime_get_coarse_ns                          // 160: bpf_ktime_get_coarse_ns
	BPF_FUNC_ima_inode_hash                               // 161: bpf_ima_inode_hash
	BPF_FUNC_sock_from_file                               // 162: bpf_sock_from_file
	BPF_FUNC_check_mtu                                    // 163: bpf_check_mtu
	BPF_FUNC_for_each_map_elem                            // 164: bpf_for_each_map_elem
	BPF_FUNC_snprintf                                     // 165: bpf_snprintf
	BPF_FUNC_sys_bpf                                      // 166: bpf_sys_bpf
	BPF_FUNC_btf_find_by_name_kind                        // 167: bpf_btf_find_by_name_kind
	BPF_FUNC_sys_close                                    // 168: bpf_sys_close
	BPF_FUNC_timer_init                                   // 169: bpf_timer_init
	BPF_FUNC_timer_set_callback                           // 170: bpf_timer_set_callback
	BPF_FUNC_timer_start                                  // 171: bpf_timer_start
	BPF_FUNC_timer_cancel                                 // 172: bpf_timer_cancel
	BPF_FUNC_get_func_ip                                  // 173: bpf_get_func_ip
	BPF_FUNC_get_attach_cookie                            // 174: bpf_get_attach_cookie
	BPF_FUNC_task_pt_regs                                 // 175: bpf_task_pt_regs
	BPF_FUNC_get_branch_snapshot                          // 176: bpf_get_branch_snapshot
	BPF_FUNC_trace_vprintk                                // 177: bpf_trace_vprintk
	BPF_FUNC_skc_to_unix_sock                             // 178: bpf_skc_to_unix_sock
	BPF_FUNC_kallsyms_lookup_name                         // 179: bpf_kallsyms_lookup_name
	BPF_FUNC_find_vma                                     // 180: bpf_find_vma
	BPF_FUNC_loop                                         // 181: bpf_loop
	BPF_FUNC_strncmp                                      // 182: bpf_strncmp
	BPF_FUNC_get_func_arg                                 // 183: bpf_get_func_arg
	BPF_FUNC_get_func_ret                                 // 184: bpf_get_func_ret
	BPF_FUNC_get_func_arg_cnt                             // 185: bpf_get_func_arg_cnt
	BPF_FUNC_get_retval                                   // 186: bpf_get_retval
	BPF_FUNC_set_retval                                   // 187: bpf_set_retval
	BPF_FUNC_xdp_get_buff_len                             // 188: bpf_xdp_get_buff_len
	BPF_FUNC_xdp_load_bytes                               // 189: bpf_xdp_load_bytes
	BPF_FUNC_xdp_store_bytes                              // 190: bpf_xdp_store_bytes
	BPF_FUNC_copy_from_user_task                          // 191: bpf_copy_from_user_task
	BPF_FUNC_skb_set_tstamp                               // 192: bpf_skb_set_tstamp
	BPF_FUNC_ima_file_hash                                // 193: bpf_ima_file_hash
	BPF_FUNC_kptr_xchg                                    // 194: bpf_kptr_xchg
	BPF_FUNC_map_lookup_percpu_elem                       // 195: bpf_map_lookup_percpu_elem
	BPF_FUNC_skc_to_mptcp_sock                            // 196: bpf_skc_to_mptcp_sock
	BPF_FUNC_dynptr_from_mem                              // 197: bpf_dynptr_from_mem
	BPF_FUNC_ringbuf_reserve_dynptr                       // 198: bpf_ringbuf_reserve_dynptr
	BPF_FUNC_ringbuf_submit_dynptr                        // 199: bpf_ringbuf_submit_dynptr
	BPF_FUNC_ringbuf_discard_dynptr                       // 200: bpf_ringbuf_discard_dynptr
	BPF_FUNC_dynptr_read                                  // 201: bpf_dynptr_read
	BPF_FUNC_dynptr_write                                 // 202: bpf_dynptr_write
	BPF_FUNC_dynptr_data                                  // 203: bpf_dynptr_data
	BPF_FUNC_tcp_raw_gen_syncookie_ipv4                   // 204: bpf_tcp_raw_gen_syncookie_ipv4
	BPF_FUNC_tcp_raw_gen_syncookie_ipv6                   // 205: bpf_tcp_raw_gen_syncookie_ipv6
	BPF_FUNC_tcp_raw_check_syncookie_ipv4                 // 206: bpf_tcp_raw_check_syncookie_ipv4
	BPF_FUNC_tcp_raw_check_syncookie_ipv6                 // 207: bpf_tcp_raw_check_syncookie_ipv6
	BPF_FUNC_ktime_get_tai_ns                             // 208: bpf_ktime_get_tai_ns
	BPF_FUNC_user_ringbuf_drain                           // 209: bpf_user_ringbuf_drain
	BPF_FUNC_cgrp_storage_get                             // 210: bpf_cgrp_storage_get
	BPF_FUNC_cgrp_storage_delete                          // 211: bpf_cgrp_storage_delete
	numHelpers                                            // the table's end
)

// helperList names the helpers in id order, without the "bpf_" prefix.
const helperList = `
unspec map_lookup_elem map_update_elem map_delete_elem probe_read ktime_get_ns trace_printk
get_prandom_u32 get_smp_processor_id skb_store_bytes l3_csum_replace l4_csum_replace tail_call
clone_redirect get_current_pid_tgid get_current_uid_gid get_current_comm get_cgroup_classid
skb_vlan_push skb_vlan_pop skb_get_tunnel_key skb_set_tunnel_key perf_event_read redirect
get_route_realm perf_event_output skb_load_bytes get_stackid csum_diff skb_get_tunnel_opt
skb_set_tunnel_opt skb_change_proto skb_change_type skb_under_cgroup get_hash_recalc
get_current_task probe_write_user current_task_under_cgroup skb_change_tail skb_pull_data
csum_update set_hash_invalid get_numa_node_id skb_change_head xdp_adjust_head probe_read_str
get_socket_cookie get_socket_uid set_hash setsockopt skb_adjust_room redirect_map sk_redirect_map
sock_map_update xdp_adjust_meta perf_event_read_value perf_prog_read_value getsockopt
override_return sock_ops_cb_flags_set msg_redirect_map msg_apply_bytes msg_cork_bytes msg_pull_data
bind xdp_adjust_tail skb_get_xfrm_state get_stack skb_load_bytes_relative fib_lookup
sock_hash_update msg_redirect_hash sk_redirect_hash lwt_push_encap lwt_seg6_store_bytes
lwt_seg6_adjust_srh lwt_seg6_action rc_repeat rc_keydown skb_cgroup_id get_current_cgroup_id
get_local_storage sk_select_reuseport skb_ancestor_cgroup_id sk_lookup_tcp sk_lookup_udp sk_release
map_push_elem map_pop_elem map_peek_elem msg_push_data msg_pop_data rc_pointer_rel spin_lock
spin_unlock sk_fullsock tcp_sock skb_ecn_set_ce get_listener_sock skc_lookup_tcp tcp_check_syncookie
sysctl_get_name sysctl_get_current_value sysctl_get_new_value sysctl_set_new_value strtol strtoul
sk_storage_get sk_storage_delete send_signal tcp_gen_syncookie skb_output probe_read_user
probe_read_kernel probe_read_user_str probe_read_kernel_str tcp_send_ack send_signal_thread
jiffies64 read_branch_records get_ns_current_pid_tgid xdp_output get_netns_cookie
get_current_ancestor_cgroup_id sk_assign ktime_get_boot_ns seq_printf seq_write sk_cgroup_id
sk_ancestor_cgroup_id ringbuf_output ringbuf_reserve ringbuf_submit ringbuf_discard ringbuf_query
csum_level skc_to_tcp6_sock skc_to_tcp_sock skc_to_tcp_timewait_sock skc_to_tcp_request_sock
skc_to_udp6_sock get_task_stack load_hdr_opt store_hdr_opt reserve_hdr_opt inode_storage_get
inode_storage_delete d_path copy_from_user snprintf_btf seq_printf_btf skb_cgroup_classid
redirect_neigh per_cpu_ptr this_cpu_ptr redirect_peer task_storage_get task_storage_delete
get_current_task_btf bprm_opts_set ktime_get_coarse_ns ima_inode_hash sock_from_file check_mtu
for_each_map_elem snprintf sys_bpf btf_find_by_name_kind sys_close timer_init timer_set_callback
timer_start timer_cancel get_func_ip get_attach_cookie task_pt_regs get_branch_snapshot
trace_vprintk skc_to_unix_sock kallsyms_lookup_name find_vma loop strncmp get_func_arg get_func_ret
get_func_arg_cnt get_retval set_retval xdp_get_buff_len xdp_load_bytes xdp_store_bytes
copy_from_user_task skb_set_tstamp ima_file_hash kptr_xchg map_lookup_percpu_elem skc_to_mptcp_sock
dynptr_from_mem ringbuf_reserve_dynptr ringbuf_submit_dynptr ringbuf_discard_dynptr dynptr_read
dynptr_write dynptr_data tcp_raw_gen_syncookie_ipv4 tcp_raw_gen_syncookie_ipv6
tcp_raw_check_syncookie_ipv4 tcp_raw_check_syncookie_ipv6 ktime_get_tai_ns user_ringbuf_drain
cgrp_storage_get cgrp_storage_delete`

var helperTable struct {
	once  sync.Once
	names []string
}

// helperNames is helperList split, on first use: a program that never
// names a helper does not carry the list.
func helperNames() []string {
	helperTable.once.Do(func() { helperTable.names = strings.Fields(helperList) })
	return helperTable.names
}

// String returns the kernel's name for h, "bpf_map_lookup_elem" for
// BPF_FUNC_map_lookup_elem, or "unknown#NNN" for an id outside the table.
func (h Helper) String() string {
	if name, ok := h.name(); ok {
		return name
	}
	return "unknown#" + strconv.Itoa(int(h))
}

func (h Helper) name() (string, bool) {
	if h < 0 || h >= numHelpers {
		return "", false
	}
	return "bpf_" + helperNames()[h], true
}

// HelperByName looks a helper up by name, with or without the "bpf_" prefix
// ("bpf_map_lookup_elem" or "map_lookup_elem").
func HelperByName(name string) (Helper, bool) {
	i := slices.Index(helperNames(), strings.TrimPrefix(name, "bpf_"))
	if i < 0 {
		return 0, false
	}
	return Helper(i), true
}
