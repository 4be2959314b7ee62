/*
 * A stand-in bcryptprimitives.dll for wine 8, which has none (wine 9 does).
 * Rust's std on Windows imports ProcessPrng from it for its random numbers
 * (HashMap keys), so without it every cross-built test binary fails to start
 * under wine ("Library bcryptprimitives.dll ... not found", exit 53).
 *
 * ProcessPrng fills the buffer from RtlGenRandom (advapi32's
 * SystemFunction036). Installed by scripts/ci-cross.sh into the wine prefix's
 * system32, for the tests under wine only; never shipped.
 */
#include <windows.h>

/* Lets scripts/ci-cross.sh tell this DLL from one wine brings. */
__attribute__((used)) static const char marker[] = "vf-ci bcryptprimitives stand-in";

/* RtlGenRandom; declared here rather than through ntsecapi.h's macro. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    /* RtlGenRandom takes a ULONG length: larger requests go in pieces. */
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
