// The small functions tests/unit/decoder/test_block_translator.cc runs
// from their translations (declared in block_translator_code.h).
// GNU as, Intel syntax. Labels named *_jb, *_site etc. mark branches, for
// the expected logs.
asm(R"(
  .intel_syntax noprefix
  .text
  .globl bttest_begin, bttest_end
  .globl bttest_straight, bttest_straight_ret, bttest_lea, bttest_rip_forms, bttest_rip_sse
  .globl bttest_loop, bttest_loop_top, bttest_loop_jb, bttest_loop_next, bttest_loop_jnz, bttest_loop_ret
  .globl bttest_loop_small, bttest_loop_jmp
  .globl bttest_flags, bttest_flags_jl, bttest_flags_less
  .globl bttest_call, bttest_call_site, bttest_call_ret, bttest_callee, bttest_callee_ret
  .globl bttest_indirect, bttest_ind_jmp_reg, bttest_ind_a, bttest_ind_jmp_mem, bttest_ind_b0, bttest_ind_call_mem
  .globl bttest_ind_b0_ret, bttest_ind_b1, bttest_ind_call_reg, bttest_ind_end, bttest_ind_callee, bttest_ind_callee_ret
  .globl bttest_link, bttest_link_jmp, bttest_link_b, bttest_link_ret
  .globl bttest_forms, bttest_forms_top, bttest_forms_loop, bttest_forms_jrcxz, bttest_forms_zero
  .globl bttest_forms_je32, bttest_forms_eq, bttest_forms_ret
  .globl bttest_retimm, bttest_retimm_site, bttest_retimm_back, bttest_retimm_callee, bttest_retimm_ret
  .globl bttest_syscall, bttest_syscall_ret, bttest_stop, bttest_stop_at, bttest_ud2
  .globl bttest_evex, bttest_evex_rip, bttest_evex_jz, bttest_evex_test, bttest_evex_none, bttest_evex_ret
  .globl bttest_evex_gs
  .globl bttest_below, bttest_below_site, bttest_below_site2
bttest_begin:
bttest_straight:                    # 2 * (data + rdi) + (data == 40)
  mov rax, qword ptr [rip + bttest_data]
  add rax, rdi
  mov qword ptr [rip + bttest_data + 8], rax
  lea rcx, [rip + bttest_data]
  add rax, qword ptr [rcx + 8]
  cmp qword ptr [rip + bttest_data], 40
  sete dl
  movzx edx, dl
  add rax, rdx
bttest_straight_ret:
  ret
bttest_lea:
  lea rax, [rip + bttest_data]
  ret
bttest_rip_forms:                   # 3 * 40: SSE, VEX, 32-bit lea, lea to r9
  movq xmm0, qword ptr [rip + bttest_data]
  movq rax, xmm0
  vmovq xmm1, qword ptr [rip + bttest_data]
  vmovq rdx, xmm1
  add rax, rdx
  lea edx, [rip + bttest_data]
  lea rcx, [rip + bttest_data]
  lea r9, [rip + bttest_data]
  sub r9, rcx
  add rax, r9
  sub edx, ecx
  add rax, rdx
  mov ecx, dword ptr [rip + bttest_data]
  add rax, rcx
  ret
bttest_rip_sse:                     # 27: 0x66-prefixed and VEX.66 forms (Capstone 4.0.2 says disp_size 2)
  movdqa xmm0, xmmword ptr [rip + bttest_vec]         # {1, 2, 3, 4}
  pand xmm0, xmmword ptr [rip + bttest_vec_mask]      # {1, 2, 3, 0}
  pshufd xmm1, xmmword ptr [rip + bttest_vec], 0x1b   # {4, 3, 2, 1}: an immediate after the disp32
  paddd xmm0, xmm1                                    # {5, 5, 5, 1}
  pinsrd xmm0, dword ptr [rip + bttest_vec + 4], 3    # {5, 5, 5, 2}
  movdqa xmmword ptr [rip + bttest_vec_out], xmm0
  vmovdqa xmm2, xmmword ptr [rip + bttest_vec_out]
  vpaddd xmm2, xmm2, xmmword ptr [rip + bttest_vec]   # {6, 7, 8, 6}
  vmovdqu xmmword ptr [rip + bttest_vec_out], xmm2
  mov eax, dword ptr [rip + bttest_vec_out]
  add eax, dword ptr [rip + bttest_vec_out + 4]
  add eax, dword ptr [rip + bttest_vec_out + 8]
  add eax, dword ptr [rip + bttest_vec_out + 12]
  ret
bttest_loop:                        # flags, rax, rcx and the red zone across branches
  xor eax, eax
  mov rcx, rdi
bttest_loop_top:
  lea rdx, [rcx + 2 * rcx + 7]
  mov qword ptr [rsp - 8], rdx
  add rax, rcx
  cmp rcx, 3
bttest_loop_jb:
  jb bttest_loop_small
  adc rax, 1000
bttest_loop_next:
  add rax, qword ptr [rsp - 8]
  dec rcx
bttest_loop_jnz:
  jnz bttest_loop_top
bttest_loop_ret:
  ret
bttest_loop_small:
  adc rax, 100
bttest_loop_jmp:
  jmp bttest_loop_next
bttest_flags:                       # the flags a jcc's target sees
  cmp rdi, 5
bttest_flags_jl:
  jl bttest_flags_less
  pushfq
  pop rax
  ret
bttest_flags_less:
  pushfq
  pop rax
  ret
bttest_call:                        # rdi + 1 when the callee sees its return address
  mov rax, rdi
bttest_call_site:
  call bttest_callee
bttest_call_ret:
  ret
bttest_callee:
  mov rdx, qword ptr [rsp]
  lea rcx, [rip + bttest_call_ret]
  sub rdx, rcx
  add rax, rdx
  add rax, 1
bttest_callee_ret:
  ret
bttest_indirect:                    # rdi 0: 11, rdi 1: 21
  lea rax, [rip + bttest_ind_a]
bttest_ind_jmp_reg:
  jmp rax
bttest_ind_a:
  lea rcx, [rip + bttest_ind_table]
bttest_ind_jmp_mem:
  jmp qword ptr [rcx + 8 * rdi]
bttest_ind_b0:
  mov eax, 10
  lea r10, [rip + bttest_ind_b0_ret]
bttest_ind_call_mem:
  call qword ptr [rip + bttest_ind_callee_ptr]
bttest_ind_b0_ret:
  jmp qword ptr [rip + bttest_ind_end_ptr]
bttest_ind_b1:
  mov eax, 20
  lea r10, [rip + bttest_ind_end]
  lea r11, [rip + bttest_ind_callee]
bttest_ind_call_reg:
  call r11
bttest_ind_end:
  ret
bttest_ind_callee:
  mov rdx, qword ptr [rsp]
  sub rdx, r10
  add rax, rdx
  add rax, 1
bttest_ind_callee_ret:
  ret
bttest_link:
  mov eax, 1
bttest_link_jmp:
  jmp bttest_link_b
  ud2
bttest_link_b:
  add eax, 2
bttest_link_ret:
  ret
bttest_forms:                       # rdi >= 1: rdi + 100 by loop, jrcxz and a rel32 jcc
  xor eax, eax
  mov rcx, rdi
bttest_forms_top:
  add rax, 1
bttest_forms_loop:
  loop bttest_forms_top
bttest_forms_jrcxz:
  jrcxz bttest_forms_zero
  ud2
bttest_forms_zero:
  cmp rax, rdi
bttest_forms_je32:
  {disp32} je bttest_forms_eq
  ud2
bttest_forms_eq:
  add rax, 100
bttest_forms_ret:
  ret
bttest_retimm:                      # rdi + 1, popped by the callee's ret 8
  push rdi
bttest_retimm_site:
  call bttest_retimm_callee
bttest_retimm_back:
  ret
bttest_retimm_callee:
  mov rax, qword ptr [rsp + 8]
  add rax, 1
bttest_retimm_ret:
  ret 8
bttest_below:                       # 2 * rdi: rdi rounds of two calls, each after a canary below rsp
  xor eax, eax
bttest_below_top:
  mov rcx, 0x5a5a5a5a5a5a5a5a
  mov qword ptr [rsp - 8], rcx
bttest_below_site:
  call bttest_below_callee
  mov rcx, 0x5a5a5a5a5a5a5a5a
  mov qword ptr [rsp - 8], rcx
  lea rdx, [rip + bttest_below_callee]
bttest_below_site2:
  call rdx
  sub rdi, 1
  jnz bttest_below_top
  ret
bttest_below_callee:
  add rax, 1
  ret
bttest_syscall:
  mov eax, 39                       # getpid
  syscall
bttest_syscall_ret:
  ret
bttest_stop:
  mov eax, 7
bttest_stop_at:
  rdtsc
  ret
bttest_ud2:
  ud2
bttest_evex:                        # AVX-512BW+VL: how many bytes of bttest_evex_text equal dil, -1 for none
  vpbroadcastb ymm17, edi
bttest_evex_rip:                    # the forms below are unknown to Capstone 4.0.2
  vpcmpeqb k1, ymm17, ymmword ptr [rip + bttest_evex_text]
  kmovd eax, k1
  popcnt eax, eax
  kortestd k1, k1
bttest_evex_jz:                     # rel8 or rel32: a global target may be either
  jz bttest_evex_none
bttest_evex_test:
  vptestnmb k2, ymm17, ymm17        # k2 = 0 unless dil is 0
  kmovd ecx, k2
  add eax, ecx
bttest_evex_ret:
  ret
bttest_evex_none:
  mov rax, -1
  ret
bttest_evex_gs:
  vpcmpeqb k1, ymm17, ymmword ptr gs:[rax]
  ret
bttest_end:
  nop

  .data
  .balign 8
bttest_data: .quad 40, 0
bttest_ind_table: .quad bttest_ind_b0, bttest_ind_b1
bttest_ind_end_ptr: .quad bttest_ind_end
bttest_ind_callee_ptr: .quad bttest_ind_callee
  .balign 16
bttest_vec: .long 1, 2, 3, 4
bttest_vec_mask: .long -1, -1, -1, 0
bttest_vec_out: .long 0, 0, 0, 0
bttest_evex_text: .ascii "a banana, a papaya and an apple."
  .text
  .att_syntax prefix
)");

