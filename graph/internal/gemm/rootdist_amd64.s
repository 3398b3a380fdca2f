//go:build !purego

#include "textflag.h"

// func rootDistKernel(r, t, c, zz *float64, groups int, xi, a float64)
//
// Four lanes at a time, the operations of graph's Matérn loop in the same
// order with no fused multiply-add: d = max(0, (xi + zz_j) − c_j·2),
// r_j = √(d + 1e-12), t_j = −a·r_j. Each lane equals the scalar result bit
// for bit (VMAXPD returns its second source, d, when d is NaN, as Go's max
// does).
TEXT ·rootDistKernel(SB), NOSPLIT, $0-56
	MOVQ r+0(FP), DI
	MOVQ t+8(FP), R9
	MOVQ c+16(FP), SI
	MOVQ zz+24(FP), DX
	MOVQ groups+32(FP), CX
	VBROADCASTSD xi+40(FP), Y8
	VBROADCASTSD a+48(FP), Y9
	MOVQ $0x8000000000000000, AX
	MOVQ AX, X10
	VBROADCASTSD X10, Y10
	VXORPD Y10, Y9, Y9                // −a
	MOVQ $0x4000000000000000, AX      // 2.0
	MOVQ AX, X11
	VBROADCASTSD X11, Y11
	MOVQ $0x3d719799812dea11, AX      // 1e-12
	MOVQ AX, X12
	VBROADCASTSD X12, Y12
	VXORPD Y13, Y13, Y13              // 0
	TESTQ CX, CX
	JE   done

loop:
	VMOVUPD (DX), Y0
	VADDPD  Y0, Y8, Y0                // xi + zz
	VMOVUPD (SI), Y1
	VMULPD  Y11, Y1, Y1               // c·2
	VSUBPD  Y1, Y0, Y0                // (xi + zz) − c·2
	VMAXPD  Y0, Y13, Y0               // max(0, d)
	VADDPD  Y12, Y0, Y0               // d + 1e-12
	VSQRTPD Y0, Y0                    // r
	VMOVUPD Y0, (DI)
	VMULPD  Y9, Y0, Y0                // −a·r
	VMOVUPD Y0, (R9)
	ADDQ    $32, DI
	ADDQ    $32, R9
	ADDQ    $32, SI
	ADDQ    $32, DX
	DECQ    CX
	JNE     loop
	VZEROUPPER

done:
	RET
