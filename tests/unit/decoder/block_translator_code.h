#pragma once
// Functions and labels of block_translator_code.cc, the code
// test_block_translator.cc translates and runs. Each function takes rdi and
// returns rax (System V); the labels mark its branches and their targets.
#include <cstdint>

extern "C" {
long bttest_straight(long), bttest_lea(long), bttest_loop(long), bttest_flags(long), bttest_call(long);
long bttest_indirect(long), bttest_link(long), bttest_syscall(long), bttest_stop(long);
long bttest_forms(long), bttest_retimm(long), bttest_rip_forms(long), bttest_rip_sse(long), bttest_evex(long);
extern const uint8_t bttest_evex_rip[], bttest_evex_jz[], bttest_evex_test[], bttest_evex_none[], bttest_evex_ret[];
extern const uint8_t bttest_evex_gs[];
long bttest_below(long);
extern const uint8_t bttest_below_site[], bttest_below_site2[];
extern const uint8_t bttest_forms_top[], bttest_forms_loop[], bttest_forms_jrcxz[], bttest_forms_zero[];
extern const uint8_t bttest_forms_je32[], bttest_forms_eq[], bttest_forms_ret[];
extern const uint8_t bttest_retimm_site[], bttest_retimm_back[], bttest_retimm_callee[], bttest_retimm_ret[];
extern const uint8_t bttest_begin[], bttest_end[], bttest_ud2[], bttest_straight_ret[];
extern const uint8_t bttest_loop_top[], bttest_loop_jb[], bttest_loop_next[], bttest_loop_jnz[], bttest_loop_ret[];
extern const uint8_t bttest_loop_small[], bttest_loop_jmp[], bttest_flags_jl[], bttest_flags_less[];
extern const uint8_t bttest_call_site[], bttest_call_ret[], bttest_callee[], bttest_callee_ret[];
extern const uint8_t bttest_ind_jmp_reg[], bttest_ind_a[], bttest_ind_jmp_mem[], bttest_ind_b0[];
extern const uint8_t bttest_ind_call_mem[], bttest_ind_b0_ret[], bttest_ind_b1[], bttest_ind_call_reg[];
extern const uint8_t bttest_ind_end[], bttest_ind_callee[], bttest_ind_callee_ret[];
extern const uint8_t bttest_link_jmp[], bttest_link_b[], bttest_link_ret[], bttest_syscall_ret[], bttest_stop_at[];
}
