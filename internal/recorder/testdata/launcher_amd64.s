# The launcher (see ../launcher_linux.go): as -o launcher.o launcher_amd64.s &&
# objcopy -O binary -j .text launcher.o launcher.bin gives launcherCode in
# ../launcher_amd64.go.

	.text
	.globl _start
_start:
	mov	(%rsp), %r12		# argc
	lea	8(%rsp), %r13		# argv
	lea	16(%rsp,%r12,8), %r14	# envp
	mov	(%r13), %rsi		# argv[0]: the pipe's fd, in decimal
	xor	%ebx, %ebx
1:	movzbl	(%rsi), %eax
	sub	$0x30, %eax
	cmp	$9, %eax
	ja	2f
	imul	$10, %ebx, %ebx
	add	%eax, %ebx
	inc	%rsi
	jmp	1b
2:	sub	$16, %rsp
3:	xor	%eax, %eax		# read(fd, sp, 1)
	mov	%ebx, %edi
	mov	%rsp, %rsi
	mov	$1, %edx
	syscall
	cmp	$-4, %rax		# EINTR
	je	3b
	cmp	$1, %rax
	jne	4f
	mov	$3, %eax		# close(fd)
	mov	%ebx, %edi
	syscall
	mov	$72, %eax		# fcntl(fd+1, F_SETFD, FD_CLOEXEC)
	lea	1(%rbx), %edi
	mov	$2, %esi
	mov	$1, %edx
	syscall
	mov	$59, %eax		# execve(argv[1], argv+2, envp)
	mov	8(%r13), %rdi
	lea	16(%r13), %rsi
	mov	%r14, %rdx
	syscall
	neg	%eax			# write(fd+1, &errno, 4)
	mov	%eax, (%rsp)
	mov	$1, %eax
	lea	1(%rbx), %edi
	mov	%rsp, %rsi
	mov	$4, %edx
	syscall
	mov	$127, %edi
	jmp	5f
4:	mov	$125, %edi
5:	mov	$231, %eax		# exit_group
	syscall
