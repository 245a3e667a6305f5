# The launcher for arm64 (see ../launcher_linux.go): aarch64-linux-gnu-as -o
# launcher.o launcher_arm64.s && aarch64-linux-gnu-objcopy -O binary -j .text
# launcher.o launcher.bin gives launcherCode in ../launcher_arm64.go.

	.text
	.globl _start
_start:
	ldr	x19, [sp]		// argc
	add	x20, sp, #8		// argv
	add	x21, x20, x19, lsl #3
	add	x21, x21, #8		// envp
	ldr	x1, [x20]		// argv[0]: the pipe's fd, in decimal
	mov	w22, #0
	mov	w3, #10
1:	ldrb	w2, [x1], #1
	sub	w2, w2, #0x30
	cmp	w2, #9
	b.hi	2f
	madd	w22, w22, w3, w2
	b	1b
2:	sub	sp, sp, #16
3:	mov	w0, w22			// read(fd, sp, 1)
	mov	x1, sp
	mov	x2, #1
	mov	x8, #63
	svc	#0
	cmn	x0, #4			// EINTR
	b.eq	3b
	cmp	x0, #1
	b.ne	4f
	mov	w0, w22			// close(fd)
	mov	x8, #57
	svc	#0
	add	w0, w22, #1		// fcntl(fd+1, F_SETFD, FD_CLOEXEC)
	mov	x1, #2
	mov	x2, #1
	mov	x8, #25
	svc	#0
	ldr	x0, [x20, #8]		// execve(argv[1], argv+2, envp)
	add	x1, x20, #16
	mov	x2, x21
	mov	x8, #221
	svc	#0
	neg	w0, w0			// write(fd+1, &errno, 4)
	str	w0, [sp]
	add	w0, w22, #1
	mov	x1, sp
	mov	x2, #4
	mov	x8, #64
	svc	#0
	mov	x0, #127
	b	5f
4:	mov	x0, #125
5:	mov	x8, #94			// exit_group
	svc	#0
