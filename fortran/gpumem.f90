! gpumem.f90 - the Fortran module of libgpumem (Fortran 2018, ISO_C_BINDING).
!
!   use gpumem
!   gfortran $(pkg-config --cflags gpumem-fortran) prog.f90 $(pkg-config --libs gpumem-fortran)
!
! The module has two parts.
!
! 1. An interface, under its C name, for every function of the C API
!    (<gpumem.h>), with the constants (GPUMEM_OK, GPUMEM_FLOAT32, ...) and
!    the public structs (type(gpumem_slice), type(gpumem_pool_stats_t), ...).
!    Calling one is calling the C function: same arguments, same ownership,
!    same status codes, documented in the C headers.  The conventions:
!     - a handle (gpumem_context *, gpumem_array *, ...) is a type(c_ptr);
!       C's NULL is c_null_ptr (a NULL context is the autoinit context, a
!       NULL stream means synchronous);
!     - a function's result is its gpumem_status, an integer(c_int);
!       out-parameters are intent(out) arguments;
!     - pointer arguments that C allows to be NULL (strides, the optional
!       out-parameters of gpumem_dtype_field, ...) are optional: leave them
!       out (with keywords for the arguments after them) to pass NULL;
!     - strings passed to C end in c_null_char (gpumem_f_cstr adds it);
!       strings C returns are type(c_ptr) (gpumem_f_string reads them);
!     - unsigned C integers are the signed Fortran integers of their size;
!     - a struct whose first field is `size` (gpumem_pool_stats_t, ...) needs
!       x%size = c_sizeof(x) before the call, as in C;
!     - the element of gpumem_array_fill, _get_item and _set_item is any
!       variable of the array's element type (type(*)).
!
! 2. Helpers, named gpumem_f_*, for Fortran arrays of the interoperable
!    types logical(c_bool), integer(c_int8_t ... c_int64_t), real(c_float,
!    c_double) and complex(c_float_complex, c_double_complex), of rank 0 to 7:
!     - gpumem_f_wrap(a, h): a host array (gpumem_host_array_wrap) over a
!       Fortran array's own memory;
!     - gpumem_f_to_device(ctx, a, d [, stream, flags]): numba's to_device
!       of a Fortran array;
!     - gpumem_f_copy_to_host(d, a [, stream]) and
!       gpumem_f_copy_to_device(d, a [, stream]): copies between an array
!       and a Fortran array;
!     - gpumem_f_pointer(h, p): a Fortran pointer (c_f_pointer) onto the
!       elements of a host-side array (host, pinned, mapped, managed);
!     - gpumem_f_device_array(ctx, shape, type, d [, stream]) and
!       gpumem_f_pinned_array(ctx, shape, type, h): an F-ordered device or
!       pinned array of a Fortran shape (integer(c_int32_t), default
!       integer, or integer(c_int64_t)) and a gpumem type (GPUMEM_FLOAT64,
!       ...); gpumem_f_pointer then gives a pointer of that shape onto the
!       pinned one;
!     - gpumem_f_get_item(d, index, value [, stream]) and
!       gpumem_f_set_item(d, index, value [, stream]): one element at a
!       Fortran index, 1-based and one per dimension (a(4, 3) is
!       gpumem_f_get_item(d, [4, 3], e)), checked against the extents and
!       the value's type;
!     - gpumem_f_section(lower, upper, stride): a Fortran section triplet
!       as a gpumem_slice;
!     - gpumem_f_string, gpumem_f_cstr, gpumem_f_last_error,
!       gpumem_f_status_string, gpumem_test_should_skip.
!    Each helper returns a gpumem_status; an optional errmsg argument
!    (character(len=*)) receives the message of a failure, the C library's
!    (gpumem_last_error) or the helper's own (a rank, an index or a type
!    that does not match), which names element types as Fortran declares
!    them: real(kind=4), not float32 or <f4.  When a call the helper makes
!    on its own to examine an array argument fails (its dtype, rank, shape
!    or host pointer: a released array fails there), errmsg names the
!    helper and the argument instead of that call:
!    "gpumem_f_copy_to_host: 'src' was released already (a dead array
!    handle)"; gpumem_f_last_error() still has the C library's own message.
!
! Statuses
!   Every status is a named constant of the module, GPUMEM_OK and one
!   GPUMEM_ERROR_* for each value of gpumem/status.h, with its C name and
!   value (tests/test-fortran-abi.sh checks each against the C header, and
!   that none is missing); GPUMEM_STATUS_COUNT is their number, and
!   gpumem_f_status_string(st) gives a status' name:
!     if (st == GPUMEM_ERROR_INVALID_STATE) ...
!
! Column-major arrays, without a copy
!   A Fortran array a(n1, n2, ..., nk) is described to the library as it
!   lies in memory: shape [n1, n2, ..., nk] in Fortran's order, and the
!   byte strides read from the array itself.  A whole array is therefore
!   F-contiguous (gpumem_array_is_f_contiguous), and a section such as
!   a(1:n:2, :) keeps its strides: no temporary is made, the library reads
!   and writes the Fortran array's own elements (a strided copy, the gaps
!   untouched).  Axis k of the library is dimension k of the Fortran array,
!   and Fortran index i (from 1) is library index i - 1; gpumem_f_section
!   turns a Fortran section a(lower:upper:stride) into the gpumem_slice
!   {lower - 1, upper, stride} that selects the same elements.  Device
!   arrays made from Fortran arrays (gpumem_f_to_device,
!   gpumem_f_device_array) are F-ordered too, so gpumem_f_pointer of their
!   host copies gives back the same shape.  A C-ordered array of shape
!   [m, n] is the Fortran array (n, m): view it through
!   gpumem_array_transpose.
!
!   Give gpumem_f_pointer a pointer that is defined (nullified or
!   associated, `=> null()` in its declaration), as any pointer argument.
!
!   The array given to a helper must have the TARGET (or POINTER)
!   attribute.  gpumem_f_wrap borrows the Fortran array's memory: it must
!   outlive the host array and every copy queued from or into it, as with
!   gpumem_host_array_wrap.  The other helpers release their wrapping before
!   they return, except what the C call keeps (gpumem_to_device with
!   GPUMEM_TO_DEVICE_WRITEBACK keeps the host array until the stream is
!   synchronized, so the Fortran array must live that long).
module gpumem
  use, intrinsic :: iso_c_binding
  implicit none
  private :: f_layout, layout_max_rank, addr, fill_strides, set_errmsg, c_errmsg, arg_errmsg, wrap_layout, &
      to_device_layout, copy_layout, view_check, fortran_type_name, dtype_check, item_check, &
      device_array_shape4, device_array_shape8, pinned_array_shape4, pinned_array_shape8

  ! ---- constants: the values of the C headers' enums and macros ----
  ! gpumem/array.h
  integer(c_int), parameter :: GPUMEM_MEMORY_DEVICE = 0
  integer(c_int), parameter :: GPUMEM_MEMORY_HOST = 1
  integer(c_int), parameter :: GPUMEM_MEMORY_PINNED = 2
  integer(c_int), parameter :: GPUMEM_MEMORY_MAPPED = 3
  integer(c_int), parameter :: GPUMEM_MEMORY_MANAGED = 4
  integer(c_int), parameter :: GPUMEM_MEMORY_FOREIGN = 5
  integer(c_int), parameter :: GPUMEM_MAX_NDIM = 32
  integer(c_int), parameter :: GPUMEM_TO_DEVICE_NO_COPY = 1
  integer(c_int), parameter :: GPUMEM_TO_DEVICE_WRITEBACK = 2
  integer(c_int), parameter :: GPUMEM_NO_COPY = 1
  ! gpumem/context.h
  integer(c_int), parameter :: GPUMEM_SELECTION_EXPLICIT = 0
  integer(c_int), parameter :: GPUMEM_SELECTION_CUDA_DEVICE = 1
  integer(c_int), parameter :: GPUMEM_SELECTION_DEVICE_FILE = 2
  integer(c_int), parameter :: GPUMEM_SELECTION_SCAN = 3
  integer(c_int), parameter :: GPUMEM_DEVICE_MULTIPROCESSORS = 0
  integer(c_int), parameter :: GPUMEM_DEVICE_MAX_THREADS_PER_BLOCK = 1
  integer(c_int), parameter :: GPUMEM_DEVICE_MAX_THREADS_PER_MULTIPROCESSOR = 2
  integer(c_int), parameter :: GPUMEM_DEVICE_WARP_SIZE = 3
  integer(c_int), parameter :: GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_BLOCK = 4
  integer(c_int), parameter :: GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 5
  integer(c_int), parameter :: GPUMEM_DEVICE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 6
  integer(c_int), parameter :: GPUMEM_DEVICE_MAX_REGISTERS_PER_BLOCK = 7
  integer(c_int), parameter :: GPUMEM_DEVICE_MAX_REGISTERS_PER_MULTIPROCESSOR = 8
  integer(c_int), parameter :: GPUMEM_DEVICE_MAX_BLOCKS_PER_MULTIPROCESSOR = 9
  integer(c_int), parameter :: GPUMEM_DEVICE_RESERVED_SHARED_MEMORY_PER_BLOCK = 10
  integer(c_int), parameter :: GPUMEM_DEVICE_TOTAL_CONSTANT_MEMORY = 11
  integer(c_int), parameter :: GPUMEM_DEVICE_CAN_MAP_HOST_MEMORY = 12
  integer(c_int), parameter :: GPUMEM_DEVICE_MANAGED_MEMORY = 13
  integer(c_int), parameter :: GPUMEM_DEVICE_CONCURRENT_MANAGED_ACCESS = 14
  integer(c_int), parameter :: GPUMEM_DEVICE_UNIFIED_ADDRESSING = 15
  integer(c_int), parameter :: GPUMEM_DEVICE_COMPUTE_MODE = 16
  integer(c_int), parameter :: GPUMEM_DEVICE_ASYNC_ENGINES = 17
  integer(c_int), parameter :: GPUMEM_DEVICE_PCI_BUS_ID = 18
  integer(c_int), parameter :: GPUMEM_DEVICE_PCI_DEVICE_ID = 19
  integer(c_int), parameter :: GPUMEM_DEVICE_PCI_DOMAIN_ID = 20
  integer(c_int), parameter :: GPUMEM_DEVICE_L2_CACHE_SIZE = 21
  integer(c_int), parameter :: GPUMEM_DEVICE_CLOCK_RATE_KHZ = 22
  integer(c_int), parameter :: GPUMEM_DEVICE_MEMORY_CLOCK_RATE_KHZ = 23
  integer(c_int), parameter :: GPUMEM_DEVICE_MEMORY_BUS_WIDTH = 24
  integer(c_int), parameter :: GPUMEM_DEVICE_TEXTURE_ALIGNMENT = 25
  integer(c_int), parameter :: GPUMEM_DEVICE_INTEGRATED = 26
  ! gpumem/debug.h
  integer(c_int), parameter :: GPUMEM_COPY_PATH_NONE = 0
  integer(c_int), parameter :: GPUMEM_COPY_PATH_HOST = 1
  integer(c_int), parameter :: GPUMEM_COPY_PATH_CONTIGUOUS = 2
  integer(c_int), parameter :: GPUMEM_COPY_PATH_DMA = 3
  integer(c_int), parameter :: GPUMEM_COPY_PATH_DEVICE_PACK = 4
  integer(c_int), parameter :: GPUMEM_COPY_PATH_CPU_PACK = 5
  integer(c_int), parameter :: GPUMEM_COPY_PATH_CPU_DEVICE_PACK = 6
  integer(c_int), parameter :: GPUMEM_COPY_PATH_STAGED = 7
  integer(c_int), parameter :: GPUMEM_COPY_PATH_DMA_LOOP = 8
  integer(c_int), parameter :: GPUMEM_COPY_PATH_PEER = 9
  integer(c_int), parameter :: GPUMEM_COPY_PATH_PEER_STAGED = 10
  ! gpumem/dtype.h
  integer(c_int), parameter :: GPUMEM_BOOL = 0
  integer(c_int), parameter :: GPUMEM_INT8 = 1
  integer(c_int), parameter :: GPUMEM_INT16 = 2
  integer(c_int), parameter :: GPUMEM_INT32 = 3
  integer(c_int), parameter :: GPUMEM_INT64 = 4
  integer(c_int), parameter :: GPUMEM_UINT8 = 5
  integer(c_int), parameter :: GPUMEM_UINT16 = 6
  integer(c_int), parameter :: GPUMEM_UINT32 = 7
  integer(c_int), parameter :: GPUMEM_UINT64 = 8
  integer(c_int), parameter :: GPUMEM_FLOAT16 = 9
  integer(c_int), parameter :: GPUMEM_FLOAT32 = 10
  integer(c_int), parameter :: GPUMEM_FLOAT64 = 11
  integer(c_int), parameter :: GPUMEM_COMPLEX64 = 12
  integer(c_int), parameter :: GPUMEM_COMPLEX128 = 13
  integer(c_int), parameter :: GPUMEM_RECORD = 14
  integer(c_int), parameter :: GPUMEM_VOID = 15
  integer(c_int), parameter :: GPUMEM_BYTEORDER_NA = 0
  integer(c_int), parameter :: GPUMEM_BYTEORDER_LITTLE = 1
  integer(c_int), parameter :: GPUMEM_BYTEORDER_BIG = 2
  integer(c_int), parameter :: GPUMEM_RECORD_PACKED = 0
  integer(c_int), parameter :: GPUMEM_RECORD_ALIGNED = 1
  ! gpumem/host.h
  integer(c_int), parameter :: GPUMEM_HOST_PORTABLE = 1
  integer(c_int), parameter :: GPUMEM_HOST_WRITECOMBINED = 4
  integer(c_int), parameter :: GPUMEM_MANAGED_ATTACH_GLOBAL = 1
  integer(c_int), parameter :: GPUMEM_MANAGED_ATTACH_HOST = 2
  ! gpumem/interop.h
  integer(c_int), parameter :: GPUMEM_CAI_VERSION = 3
  integer(c_int), parameter :: GPUMEM_CAI_STREAM_LEGACY = 1
  integer(c_int), parameter :: GPUMEM_CAI_STREAM_PER_THREAD = 2
  integer(c_int), parameter :: GPUMEM_CAI_NO_SYNCHRONIZE = 1
  integer(c_int), parameter :: GPUMEM_CAI_READ_ONLY = 2
  integer(c_int), parameter :: GPUMEM_DLPACK_MAJOR_VERSION = 1
  integer(c_int), parameter :: GPUMEM_DLPACK_MINOR_VERSION = 0
  integer(c_int), parameter :: GPUMEM_DLPACK_VERSIONED = 1
  integer(c_int), parameter :: GPUMEM_DLPACK_READ_ONLY = 2
  ! gpumem/ipc.h
  integer(c_int), parameter :: GPUMEM_POINTER_UNKNOWN = 0
  integer(c_int), parameter :: GPUMEM_POINTER_DEVICE = 1
  integer(c_int), parameter :: GPUMEM_POINTER_PINNED = 2
  integer(c_int), parameter :: GPUMEM_POINTER_MAPPED = 3
  integer(c_int), parameter :: GPUMEM_POINTER_MANAGED = 4
  integer(c_int), parameter :: GPUMEM_IPC_HANDLE_SIZE = 2048
  integer(c_int), parameter :: GPUMEM_IPC_VERSION = 1
  ! gpumem/module.h
  integer(c_int), parameter :: GPUMEM_FUNCTION_MAX_THREADS_PER_BLOCK = 0
  integer(c_int), parameter :: GPUMEM_FUNCTION_SHARED_SIZE_BYTES = 1
  integer(c_int), parameter :: GPUMEM_FUNCTION_CONST_SIZE_BYTES = 2
  integer(c_int), parameter :: GPUMEM_FUNCTION_LOCAL_SIZE_BYTES = 3
  integer(c_int), parameter :: GPUMEM_FUNCTION_NUM_REGS = 4
  integer(c_int), parameter :: GPUMEM_FUNCTION_PTX_VERSION = 5
  integer(c_int), parameter :: GPUMEM_FUNCTION_BINARY_VERSION = 6
  integer(c_int), parameter :: GPUMEM_FUNCTION_CACHE_MODE_CA = 7
  integer(c_int), parameter :: GPUMEM_FUNCTION_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
  integer(c_int), parameter :: GPUMEM_FUNCTION_PREFERRED_SHARED_MEMORY_CARVEOUT = 9
  ! gpumem/occupancy.h
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_MAX_THREADS = 0
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_WARP_SIZE = 1
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_WARPS_PER_MP = 2
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_THREAD_BLOCKS_PER_MP = 3
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_REGISTERS = 4
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_SHARED_MEMORY = 5
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_SMEM_GRANULARITY = 6
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_SMEM_ALLOC_GRANULARITY = 7
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_REGISTERS_PER_MP = 8
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_SHARED_MEMORY_PER_MP = 9
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_SHARED_MEMORY_OPTIN = 10
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_RESERVED_SHARED_MEMORY = 11
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_REGISTER_ALLOCATION_UNIT = 12
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_MAX_REGISTERS_PER_THREAD = 13
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_REGISTER_PARTITIONS = 14
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_MULTIPROCESSORS = 15
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_COMPUTE_CAPABILITY = 16
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_DEVICE = 17
  integer(c_int), parameter :: GPUMEM_LIMITED_BY_DEVICE = 0
  integer(c_int), parameter :: GPUMEM_LIMITED_BY_WARPS = 1
  integer(c_int), parameter :: GPUMEM_LIMITED_BY_REGISTERS = 2
  integer(c_int), parameter :: GPUMEM_LIMITED_BY_SHARED_MEMORY = 3
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_DEFAULT = -1
  integer(c_int), parameter :: GPUMEM_DEVICE_DATA_FIELD_COUNT = 18
  integer(c_int), parameter :: GPUMEM_OCCUPANCY_NO_LIMIT = 2147483647
  ! gpumem/pool.h
  integer(c_int), parameter :: GPUMEM_POOL_NO_THREAD_CACHE = 256
  integer(c_int), parameter :: GPUMEM_HOST_ALLOC_PORTABLE = 1
  integer(c_int), parameter :: GPUMEM_HOST_ALLOC_DEVICEMAP = 2
  integer(c_int), parameter :: GPUMEM_HOST_ALLOC_WRITECOMBINED = 4
  integer(c_int), parameter :: GPUMEM_POOL_SOURCE_DEVICE = 0
  integer(c_int), parameter :: GPUMEM_POOL_SOURCE_PINNED = 1
  integer(c_int), parameter :: GPUMEM_POOL_SOURCE_VIRTUAL = 2
  integer(c_int), parameter :: GPUMEM_POOL_SOURCE_ASYNC = 3
  integer(c_int), parameter :: GPUMEM_POOL_HANDLE_NONE = 0
  integer(c_int), parameter :: GPUMEM_POOL_HANDLE_POSIX_FD = 1
  ! gpumem/pool_ipc.h
  integer(c_int), parameter :: GPUMEM_POOL_IPC_VERSION = 1
  integer(c_int), parameter :: GPUMEM_POOL_IPC_HANDLE_SIZE = 128
  integer(c_int), parameter :: GPUMEM_POOL_IPC_MAX_FDS = 32
  ! gpumem/memory.h
  integer(c_int), parameter :: GPUMEM_MEMORY_DEVICE_INFO = 1
  integer(c_int), parameter :: GPUMEM_MEMORY_WHOLE_DEVICE = 2
  integer(c_int), parameter :: GPUMEM_MEMORY_REPORT_ONE_LINE = 1
  integer(c_int), parameter :: GPUMEM_OOM_CALLBACK_MAX_CALLS = 4
  ! gpumem/status.h
  integer(c_int), parameter :: GPUMEM_OK = 0
  integer(c_int), parameter :: GPUMEM_ERROR_NULL_ARGUMENT = 1
  integer(c_int), parameter :: GPUMEM_ERROR_INVALID_VALUE = 2
  integer(c_int), parameter :: GPUMEM_ERROR_INVALID_ENVIRONMENT = 3
  integer(c_int), parameter :: GPUMEM_ERROR_OUT_OF_MEMORY = 4
  integer(c_int), parameter :: GPUMEM_ERROR_HOST_OUT_OF_MEMORY = 5
  integer(c_int), parameter :: GPUMEM_ERROR_DRIVER_NOT_FOUND = 6
  integer(c_int), parameter :: GPUMEM_ERROR_NO_DEVICE = 7
  integer(c_int), parameter :: GPUMEM_ERROR_INVALID_DEVICE = 8
  integer(c_int), parameter :: GPUMEM_ERROR_DEVICE_UNAVAILABLE = 9
  integer(c_int), parameter :: GPUMEM_ERROR_DRIVER = 10
  integer(c_int), parameter :: GPUMEM_ERROR_NOT_SUPPORTED = 11
  integer(c_int), parameter :: GPUMEM_ERROR_NOT_SIMULATED = 12
  integer(c_int), parameter :: GPUMEM_ERROR_NOT_READY = 13
  integer(c_int), parameter :: GPUMEM_ERROR_INVALID_STATE = 14
  integer(c_int), parameter :: GPUMEM_ERROR_CONTEXT_MISMATCH = 15
  integer(c_int), parameter :: GPUMEM_ERROR_OVERFLOW = 16
  integer(c_int), parameter :: GPUMEM_ERROR_NEGATIVE_DIMENSION = 17
  integer(c_int), parameter :: GPUMEM_ERROR_TOO_MANY_DIMENSIONS = 18
  integer(c_int), parameter :: GPUMEM_ERROR_SHAPE_MISMATCH = 19
  integer(c_int), parameter :: GPUMEM_ERROR_DTYPE_MISMATCH = 20
  integer(c_int), parameter :: GPUMEM_ERROR_INVALID_RESHAPE = 21
  integer(c_int), parameter :: GPUMEM_ERROR_COPY_REQUIRED = 22
  integer(c_int), parameter :: GPUMEM_ERROR_INVALID_SECTION = 23
  integer(c_int), parameter :: GPUMEM_ERROR_INDEX_OUT_OF_RANGE = 24
  integer(c_int), parameter :: GPUMEM_ERROR_ZERO_STEP = 25
  integer(c_int), parameter :: GPUMEM_ERROR_INVALID_ORDER = 26
  integer(c_int), parameter :: GPUMEM_ERROR_INVALID_DTYPE = 27
  integer(c_int), parameter :: GPUMEM_ERROR_NOT_FOUND = 28
  integer(c_int), parameter :: GPUMEM_ERROR_LAUNCH_FAILED = 29
  integer(c_int), parameter :: GPUMEM_ERROR_INTERNAL = 30
  integer(c_int), parameter :: GPUMEM_STATUS_COUNT = 31
  ! gpumem/stream.h
  integer(c_int), parameter :: GPUMEM_STREAM_NON_BLOCKING = 1
  ! gpumem/event.h
  integer(c_int), parameter :: GPUMEM_EVENT_BLOCKING_SYNC = 1
  integer(c_int), parameter :: GPUMEM_EVENT_DISABLE_TIMING = 2
  ! gpumem/trace.h
  integer(c_int), parameter :: GPUMEM_TRACE_CALL_SITES = 1

  !> GPUMEM_SLICE_DEFAULT, an omitted slice bound (INT64_MIN).
  integer(c_int64_t), parameter :: GPUMEM_SLICE_DEFAULT = ibset(0_c_int64_t, 63)
  !> GPUMEM_SLICE_INDEX (INT64_MIN + 1): a gpumem_slice with this stop is the integer index start.
  integer(c_int64_t), parameter :: GPUMEM_SLICE_INDEX = ibset(1_c_int64_t, 63)

  ! ---- the public structs ----
  !> gpumem_slice: Python's start:stop:step, 0-based, stop excluded.
  type, bind(c) :: gpumem_slice
    integer(c_int64_t) :: start, stop, step
  end type gpumem_slice
  !> GPUMEM_SLICE_ALL, the whole axis.
  type(gpumem_slice), parameter :: GPUMEM_SLICE_ALL = &
      gpumem_slice(GPUMEM_SLICE_DEFAULT, GPUMEM_SLICE_DEFAULT, 1_c_int64_t)

  !> struct gpumem_pool_stats (set %size = c_sizeof(x) first); _t because Fortran names are
  !> case-blind and gpumem_pool_stats is also the function's name.
  type, bind(c) :: gpumem_pool_stats_t
    integer(c_size_t) :: size
    integer(c_int64_t) :: held_blocks, held_bytes, active_blocks, active_bytes, active_requested_bytes
    integer(c_int64_t) :: peak_active_bytes, hits, misses, oom_retries, driver_frees
    integer(c_int64_t) :: source_bytes, reserved_bytes
  end type gpumem_pool_stats_t

  !> struct gpumem_pool_props (GPUMEM_POOL_PROPS_INIT's values below; set %size = c_sizeof(x)).
  type, bind(c) :: gpumem_pool_props
    integer(c_size_t) :: size
    integer(c_int) :: source = GPUMEM_POOL_SOURCE_DEVICE, device = -1, numa_node = -1, flags = 0
    integer(c_int64_t) :: growth_step = 0, maximum = 0
    integer(c_int64_t) :: release_threshold = -1_c_int64_t ! UINT64_MAX
    integer(c_int) :: handle_type = GPUMEM_POOL_HANDLE_NONE
  end type gpumem_pool_props

  !> struct gpumem_memory_usage: live memory of one kind, and its peaks.
  type, bind(c) :: gpumem_memory_usage
    integer(c_int64_t) :: bytes, count, peak_bytes, peak_count
  end type gpumem_memory_usage

  !> struct gpumem_memory_report (set %size = c_sizeof(x) first); _t because gpumem_memory_report
  !> is also the function's name.
  type, bind(c) :: gpumem_memory_report_t
    integer(c_size_t) :: size
    integer(c_int) :: flags, ordinal
    integer(c_int64_t) :: contexts, device_free_bytes, device_total_bytes, others_bytes
    type(gpumem_memory_usage) :: device, pinned, mapped, managed, registered
    integer(c_int64_t) :: device_reserved_bytes, peak_device_reserved_bytes
    integer(c_int64_t) :: pools, pool_held_blocks, pool_held_bytes, pool_largest_free_block
    integer(c_int64_t) :: pending_frees, pending_free_bytes, driver_allocations
    integer(c_int64_t) :: oom_ladder_runs, oom_ladder_successes, oom_callback_calls, oom_callback_successes
    integer(c_int64_t) :: oom_failures
  end type gpumem_memory_report_t

  !> struct gpumem_memory_pool_report (set %size = c_sizeof(x) in every element first).
  type, bind(c) :: gpumem_memory_pool_report
    integer(c_size_t) :: size
    type(c_ptr) :: pool, host_pool
    integer(c_int) :: kind, own, ordinal
    integer(c_int64_t) :: held_blocks, held_bytes, largest_free_block
    integer(c_int64_t) :: active_blocks, active_bytes, active_requested_bytes
  end type gpumem_memory_pool_report

  !> struct gpumem_oom_info, what an out-of-memory callback is told (the library fills it).
  type, bind(c) :: gpumem_oom_info
    integer(c_size_t) :: size, bytes
    integer(c_int) :: kind, attempt
    type(c_ptr) :: call, message
  end type gpumem_oom_info

  !> gpumem_staging_settings (set %size = c_sizeof(x) first).
  type, bind(c) :: gpumem_staging_settings
    integer(c_size_t) :: size
    integer(c_int) :: threads
    integer(c_size_t) :: chunk_bytes
    integer(c_int) :: depth
    integer(c_size_t) :: min_bytes
  end type gpumem_staging_settings

  !> gpumem_field, for gpumem_dtype_record_create.
  type, bind(c) :: gpumem_field
    type(c_ptr) :: name, dtype
    integer(c_int64_t) :: offset
    integer(c_int) :: ndim
    type(c_ptr) :: shape
  end type gpumem_field

  !> gpumem_cuda_array_interface (set %size = c_sizeof(x) first).
  type, bind(c) :: gpumem_cuda_array_interface
    integer(c_size_t) :: size
    integer(c_int) :: version, ndim
    integer(c_int64_t) :: shape(GPUMEM_MAX_NDIM)
    integer(c_int) :: has_strides
    integer(c_int64_t) :: strides(GPUMEM_MAX_NDIM)
    character(kind=c_char) :: typestr(24)
    type(c_ptr) :: descr, descr_buffer
    integer(c_size_t) :: descr_buffer_size
    integer(c_int64_t) :: data
    integer(c_int) :: readonly, has_mask, has_stream
    integer(c_intptr_t) :: stream
  end type gpumem_cuda_array_interface

  !> gpumem_occupancy_record (set %size = c_sizeof(x) first).
  type, bind(c) :: gpumem_occupancy_record
    integer(c_size_t) :: size
    integer(c_int) :: tb_per_mp, limited_by, warps_per_mp
    real(c_double) :: occupancy
    integer(c_int) :: limiting_factors, tb_limit_device, tb_limit_warps, tb_limit_registers
    integer(c_int) :: tb_limit_shared_memory, warps_per_block, registers_per_block
    integer(c_size_t) :: shared_memory_per_block
  end type gpumem_occupancy_record

  !> gpumem_pointer_info (set %size = c_sizeof(x) first).
  type, bind(c) :: gpumem_pointer_info
    integer(c_size_t) :: size
    integer(c_int) :: kind, device
    integer(c_int64_t) :: driver_context, device_pointer
    type(c_ptr) :: host_pointer
    integer(c_int64_t) :: range_start, range_size
    integer(c_int) :: ipc_capable
  end type gpumem_pointer_info

  !> gpumem_ipc_handle: GPUMEM_IPC_HANDLE_SIZE plain bytes.
  type, bind(c) :: gpumem_ipc_handle
    integer(c_signed_char) :: bytes(GPUMEM_IPC_HANDLE_SIZE)
  end type gpumem_ipc_handle

  !> gpumem_pool_ipc_handle: GPUMEM_POOL_IPC_HANDLE_SIZE plain bytes.
  type, bind(c) :: gpumem_pool_ipc_handle
    integer(c_signed_char) :: bytes(GPUMEM_POOL_IPC_HANDLE_SIZE)
  end type gpumem_pool_ipc_handle

  ! The helpers' description of a Fortran array.
  integer, parameter :: layout_max_rank = 7
  type :: f_layout
    type(c_ptr) :: data = c_null_ptr
    integer(c_int) :: ndim = 0
    integer(c_int64_t) :: shape(layout_max_rank) = 0, strides(layout_max_rank) = 0
  end type f_layout

  ! ---- the C API ----
  interface
    ! ---- gpumem/array.h
    function gpumem_host_array_wrap(data, ndim, shape, strides, dtype, array) &
        bind(c, name='gpumem_host_array_wrap')
      import
      type(c_ptr), value :: data
      integer(c_int), value :: ndim
      integer(c_int64_t), intent(in), optional :: shape(*)
      integer(c_int64_t), intent(in), optional :: strides(*)
      type(c_ptr), value :: dtype
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_host_array_wrap
    end function
    function gpumem_host_array(ndim, shape, dtype, order, array) &
        bind(c, name='gpumem_host_array')
      import
      integer(c_int), value :: ndim
      integer(c_int64_t), intent(in) :: shape(*)
      type(c_ptr), value :: dtype
      character(kind=c_char), value :: order
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_host_array
    end function
    function gpumem_device_array(ctx, ndim, shape, strides, dtype, order, stream, array) &
        bind(c, name='gpumem_device_array')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: ndim
      integer(c_int64_t), intent(in) :: shape(*)
      integer(c_int64_t), intent(in), optional :: strides(*)
      type(c_ptr), value :: dtype
      character(kind=c_char), value :: order
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_device_array
    end function
    function gpumem_device_array_like(ctx, like, stream, array) &
        bind(c, name='gpumem_device_array_like')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), value :: like
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_device_array_like
    end function
    function gpumem_device_record(ctx, dtype, stream, array) &
        bind(c, name='gpumem_device_record')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), value :: dtype
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_device_record
    end function
    function gpumem_to_device(ctx, host, stream, flags, array) &
        bind(c, name='gpumem_to_device')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), value :: host
      type(c_ptr), value :: stream
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_to_device
    end function
    function gpumem_array_retain(array) &
        bind(c, name='gpumem_array_retain')
      import
      type(c_ptr), value :: array
      integer(c_int) :: gpumem_array_retain
    end function
    function gpumem_array_release(array) &
        bind(c, name='gpumem_array_release')
      import
      type(c_ptr), value :: array
      integer(c_int) :: gpumem_array_release
    end function
    function gpumem_array_release_n(count, arrays) &
        bind(c, name='gpumem_array_release_n')
      import
      integer(c_size_t), value :: count
      type(c_ptr), intent(in), optional :: arrays(*)
      integer(c_int) :: gpumem_array_release_n
    end function
    function gpumem_array_copy(dst, src, stream) &
        bind(c, name='gpumem_array_copy')
      import
      type(c_ptr), value :: dst
      type(c_ptr), value :: src
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_array_copy
    end function
    ! gpumem/batch.h: dst(i) = src(i) for count pairs of array handles, on one stream
    function gpumem_array_copy_batch(count, dst, src, stream) &
        bind(c, name='gpumem_array_copy_batch')
      import
      integer(c_size_t), value :: count
      type(c_ptr), intent(in) :: dst(*)
      type(c_ptr), intent(in) :: src(*)
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_array_copy_batch
    end function
    function gpumem_array_pack(count, views, buffer, stream) &
        bind(c, name='gpumem_array_pack')
      import
      integer(c_size_t), value :: count
      type(c_ptr), intent(in) :: views(*)
      type(c_ptr), value :: buffer
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_array_pack
    end function
    function gpumem_array_unpack(count, views, buffer, stream) &
        bind(c, name='gpumem_array_unpack')
      import
      integer(c_size_t), value :: count
      type(c_ptr), intent(in) :: views(*)
      type(c_ptr), value :: buffer
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_array_unpack
    end function
    function gpumem_copy_to_host(src, dst, stream) &
        bind(c, name='gpumem_copy_to_host')
      import
      type(c_ptr), value :: src
      type(c_ptr), value :: dst
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_copy_to_host
    end function
    function gpumem_copy_to_device(dst, src, stream) &
        bind(c, name='gpumem_copy_to_device')
      import
      type(c_ptr), value :: dst
      type(c_ptr), value :: src
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_copy_to_device
    end function
    function gpumem_array_fill(array, value, stream) &
        bind(c, name='gpumem_array_fill')
      import
      type(c_ptr), value :: array
      type(*), intent(in) :: value
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_array_fill
    end function
    function gpumem_array_get_item(array, index, value, stream) &
        bind(c, name='gpumem_array_get_item')
      import
      type(c_ptr), value :: array
      integer(c_int64_t), intent(in), optional :: index(*)  ! absent: NULL, for a 0-d array
      type(*), intent(inout) :: value
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_array_get_item
    end function
    function gpumem_array_set_item(array, index, value, stream) &
        bind(c, name='gpumem_array_set_item')
      import
      type(c_ptr), value :: array
      integer(c_int64_t), intent(in), optional :: index(*)  ! absent: NULL, for a 0-d array
      type(*), intent(in) :: value
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_array_set_item
    end function
    function gpumem_array_get_item_n(array, nindex, index, value, stream) &
        bind(c, name='gpumem_array_get_item_n')
      import
      type(c_ptr), value :: array
      integer(c_int), value :: nindex
      integer(c_int64_t), intent(in), optional :: index(*)
      type(*), intent(inout) :: value
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_array_get_item_n
    end function
    function gpumem_array_set_item_n(array, nindex, index, value, stream) &
        bind(c, name='gpumem_array_set_item_n')
      import
      type(c_ptr), value :: array
      integer(c_int), value :: nindex
      integer(c_int64_t), intent(in), optional :: index(*)
      type(*), intent(in) :: value
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_array_set_item_n
    end function
    function gpumem_array_slice(array, slices, nslices, view) &
        bind(c, name='gpumem_array_slice')
      import
      type(c_ptr), value :: array
      type(gpumem_slice), intent(in), optional :: slices(*)
      integer(c_int), value :: nslices
      type(c_ptr), intent(out) :: view
      integer(c_int) :: gpumem_array_slice
    end function
    function gpumem_array_transpose(array, axes, view) &
        bind(c, name='gpumem_array_transpose')
      import
      type(c_ptr), value :: array
      integer(c_int), intent(in), optional :: axes(*)
      type(c_ptr), intent(out) :: view
      integer(c_int) :: gpumem_array_transpose
    end function
    function gpumem_array_view(array, dtype, view) &
        bind(c, name='gpumem_array_view')
      import
      type(c_ptr), value :: array
      type(c_ptr), value :: dtype
      type(c_ptr), intent(out) :: view
      integer(c_int) :: gpumem_array_view
    end function
    function gpumem_array_reshape(array, ndim, shape, order, flags, stream, result) &
        bind(c, name='gpumem_array_reshape')
      import
      type(c_ptr), value :: array
      integer(c_int), value :: ndim
      integer(c_int64_t), intent(in), optional :: shape(*)
      character(kind=c_char), value :: order
      integer(c_int), value :: flags
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: result
      integer(c_int) :: gpumem_array_reshape
    end function
    function gpumem_array_ravel(array, order, flags, stream, result) &
        bind(c, name='gpumem_array_ravel')
      import
      type(c_ptr), value :: array
      character(kind=c_char), value :: order
      integer(c_int), value :: flags
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: result
      integer(c_int) :: gpumem_array_ravel
    end function
    function gpumem_array_split(array, section, pieces, capacity, count) &
        bind(c, name='gpumem_array_split')
      import
      type(c_ptr), value :: array
      integer(c_int64_t), value :: section
      type(c_ptr), intent(out) :: pieces(*)
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(out) :: count
      integer(c_int) :: gpumem_array_split
    end function
    function gpumem_array_ndim(array, ndim) &
        bind(c, name='gpumem_array_ndim')
      import
      type(c_ptr), value :: array
      integer(c_int), intent(out) :: ndim
      integer(c_int) :: gpumem_array_ndim
    end function
    function gpumem_array_shape(array, shape) &
        bind(c, name='gpumem_array_shape')
      import
      type(c_ptr), value :: array
      integer(c_int64_t), intent(out) :: shape(*)
      integer(c_int) :: gpumem_array_shape
    end function
    function gpumem_array_strides(array, strides) &
        bind(c, name='gpumem_array_strides')
      import
      type(c_ptr), value :: array
      integer(c_int64_t), intent(out) :: strides(*)
      integer(c_int) :: gpumem_array_strides
    end function
    function gpumem_array_dtype(array, dtype) &
        bind(c, name='gpumem_array_dtype')
      import
      type(c_ptr), value :: array
      type(c_ptr), intent(out) :: dtype
      integer(c_int) :: gpumem_array_dtype
    end function
    function gpumem_array_size(array, size) &
        bind(c, name='gpumem_array_size')
      import
      type(c_ptr), value :: array
      integer(c_int64_t), intent(out) :: size
      integer(c_int) :: gpumem_array_size
    end function
    function gpumem_array_nbytes(array, nbytes) &
        bind(c, name='gpumem_array_nbytes')
      import
      type(c_ptr), value :: array
      integer(c_int64_t), intent(out) :: nbytes
      integer(c_int) :: gpumem_array_nbytes
    end function
    function gpumem_array_kind(array, kind) &
        bind(c, name='gpumem_array_kind')
      import
      type(c_ptr), value :: array
      integer(c_int), intent(out) :: kind
      integer(c_int) :: gpumem_array_kind
    end function
    function gpumem_memory_kind_name(kind) &
        bind(c, name='gpumem_memory_kind_name')
      import
      integer(c_int), value :: kind
      type(c_ptr) :: gpumem_memory_kind_name
    end function
    function gpumem_array_context(array, ctx) &
        bind(c, name='gpumem_array_context')
      import
      type(c_ptr), value :: array
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: gpumem_array_context
    end function
    function gpumem_array_device_pointer(array, pointer) &
        bind(c, name='gpumem_array_device_pointer')
      import
      type(c_ptr), value :: array
      integer(c_int64_t), intent(out) :: pointer
      integer(c_int) :: gpumem_array_device_pointer
    end function
    function gpumem_array_host_pointer(array, pointer) &
        bind(c, name='gpumem_array_host_pointer')
      import
      type(c_ptr), value :: array
      type(c_ptr), intent(out) :: pointer
      integer(c_int) :: gpumem_array_host_pointer
    end function
    function gpumem_array_is_c_contiguous(array, result) &
        bind(c, name='gpumem_array_is_c_contiguous')
      import
      type(c_ptr), value :: array
      integer(c_int), intent(out) :: result
      integer(c_int) :: gpumem_array_is_c_contiguous
    end function
    function gpumem_array_is_f_contiguous(array, result) &
        bind(c, name='gpumem_array_is_f_contiguous')
      import
      type(c_ptr), value :: array
      integer(c_int), intent(out) :: result
      integer(c_int) :: gpumem_array_is_f_contiguous
    end function
    function gpumem_array_is_readonly(array, readonly) &
        bind(c, name='gpumem_array_is_readonly')
      import
      type(c_ptr), value :: array
      integer(c_int), intent(out) :: readonly
      integer(c_int) :: gpumem_array_is_readonly
    end function
    function gpumem_array_set_readonly(array, readonly) &
        bind(c, name='gpumem_array_set_readonly')
      import
      type(c_ptr), value :: array
      integer(c_int), value :: readonly
      integer(c_int) :: gpumem_array_set_readonly
    end function
    ! ---- gpumem/cleanup.h
    function gpumem_context_set_dealloc_limits(ctx, max_count, max_ratio) &
        bind(c, name='gpumem_context_set_dealloc_limits')
      import
      type(c_ptr), value :: ctx
      integer(c_size_t), value :: max_count
      real(c_double), value :: max_ratio
      integer(c_int) :: gpumem_context_set_dealloc_limits
    end function
    function gpumem_context_get_dealloc_limits(ctx, max_count, max_ratio) &
        bind(c, name='gpumem_context_get_dealloc_limits')
      import
      type(c_ptr), value :: ctx
      integer(c_size_t), intent(out) :: max_count
      real(c_double), intent(out) :: max_ratio
      integer(c_int) :: gpumem_context_get_dealloc_limits
    end function
    function gpumem_context_flush_deallocations(ctx) &
        bind(c, name='gpumem_context_flush_deallocations')
      import
      type(c_ptr), value :: ctx
      integer(c_int) :: gpumem_context_flush_deallocations
    end function
    function gpumem_context_pending_deallocations(ctx, count, bytes) &
        bind(c, name='gpumem_context_pending_deallocations')
      import
      type(c_ptr), value :: ctx
      integer(c_size_t), intent(out), optional :: count
      integer(c_int64_t), intent(out), optional :: bytes
      integer(c_int) :: gpumem_context_pending_deallocations
    end function
    function gpumem_defer_cleanup_begin(ctx) &
        bind(c, name='gpumem_defer_cleanup_begin')
      import
      type(c_ptr), value :: ctx
      integer(c_int) :: gpumem_defer_cleanup_begin
    end function
    function gpumem_defer_cleanup_end(ctx) &
        bind(c, name='gpumem_defer_cleanup_end')
      import
      type(c_ptr), value :: ctx
      integer(c_int) :: gpumem_defer_cleanup_end
    end function
    ! ---- gpumem/context.h
    function gpumem_backend(name) &
        bind(c, name='gpumem_backend')
      import
      type(c_ptr), intent(out) :: name
      integer(c_int) :: gpumem_backend
    end function
    function gpumem_driver_version(version) &
        bind(c, name='gpumem_driver_version')
      import
      integer(c_int), intent(out) :: version
      integer(c_int) :: gpumem_driver_version
    end function
    function gpumem_device_count(count) &
        bind(c, name='gpumem_device_count')
      import
      integer(c_int), intent(out) :: count
      integer(c_int) :: gpumem_device_count
    end function
    function gpumem_device_name(device, name, size) &
        bind(c, name='gpumem_device_name')
      import
      integer(c_int), value :: device
      character(kind=c_char), intent(out) :: name(*)
      integer(c_size_t), value :: size
      integer(c_int) :: gpumem_device_name
    end function
    function gpumem_device_compute_capability(device, major, minor) &
        bind(c, name='gpumem_device_compute_capability')
      import
      integer(c_int), value :: device
      integer(c_int), intent(out) :: major
      integer(c_int), intent(out) :: minor
      integer(c_int) :: gpumem_device_compute_capability
    end function
    function gpumem_device_total_memory(device, bytes) &
        bind(c, name='gpumem_device_total_memory')
      import
      integer(c_int), value :: device
      integer(c_int64_t), intent(out) :: bytes
      integer(c_int) :: gpumem_device_total_memory
    end function
    function gpumem_device_attribute(device, attr, value) &
        bind(c, name='gpumem_device_attribute')
      import
      integer(c_int), value :: device
      integer(c_int), value :: attr
      integer(c_int), intent(out) :: value
      integer(c_int) :: gpumem_device_attribute
    end function
    function gpumem_get_default_device(fallback, device) &
        bind(c, name='gpumem_get_default_device')
      import
      integer(c_int), value :: fallback
      integer(c_int), intent(out) :: device
      integer(c_int) :: gpumem_get_default_device
    end function
    function gpumem_context_create(device, ctx) &
        bind(c, name='gpumem_context_create')
      import
      integer(c_int), value :: device
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: gpumem_context_create
    end function
    function gpumem_context_create_default(ctx) &
        bind(c, name='gpumem_context_create_default')
      import
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: gpumem_context_create_default
    end function
    function gpumem_context_retain(ctx) &
        bind(c, name='gpumem_context_retain')
      import
      type(c_ptr), value :: ctx
      integer(c_int) :: gpumem_context_retain
    end function
    function gpumem_context_release(ctx) &
        bind(c, name='gpumem_context_release')
      import
      type(c_ptr), value :: ctx
      integer(c_int) :: gpumem_context_release
    end function
    function gpumem_context_get_device(ctx, device) &
        bind(c, name='gpumem_context_get_device')
      import
      type(c_ptr), value :: ctx
      integer(c_int), intent(out) :: device
      integer(c_int) :: gpumem_context_get_device
    end function
    function gpumem_context_selection(ctx, rule) &
        bind(c, name='gpumem_context_selection')
      import
      type(c_ptr), value :: ctx
      integer(c_int), intent(out) :: rule
      integer(c_int) :: gpumem_context_selection
    end function
    function gpumem_selection_name(rule) &
        bind(c, name='gpumem_selection_name')
      import
      integer(c_int), value :: rule
      type(c_ptr) :: gpumem_selection_name
    end function
    function gpumem_context_refcount(ctx, count) &
        bind(c, name='gpumem_context_refcount')
      import
      type(c_ptr), value :: ctx
      integer(c_int), intent(out) :: count
      integer(c_int) :: gpumem_context_refcount
    end function
    function gpumem_memory_info(ctx, free_bytes, total_bytes) &
        bind(c, name='gpumem_memory_info')
      import
      type(c_ptr), value :: ctx
      integer(c_int64_t), intent(out) :: free_bytes
      integer(c_int64_t), intent(out) :: total_bytes
      integer(c_int) :: gpumem_memory_info
    end function
    function gpumem_autoinit(ctx) &
        bind(c, name='gpumem_autoinit')
      import
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: gpumem_autoinit
    end function
    function gpumem_size_parse(text, bytes) &
        bind(c, name='gpumem_size_parse')
      import
      character(kind=c_char), intent(in) :: text(*)
      integer(c_int64_t), intent(out) :: bytes
      integer(c_int) :: gpumem_size_parse
    end function
    ! ---- gpumem/debug.h
    function gpumem_debug_driver_calls(op, count) &
        bind(c, name='gpumem_debug_driver_calls')
      import
      character(kind=c_char), intent(in), optional :: op(*)
      integer(c_int64_t), intent(out) :: count
      integer(c_int) :: gpumem_debug_driver_calls
    end function
    function gpumem_debug_fail_call(nth, driver_error) &
        bind(c, name='gpumem_debug_fail_call')
      import
      integer(c_int64_t), value :: nth
      integer(c_int), value :: driver_error
      integer(c_int) :: gpumem_debug_fail_call
    end function
    function gpumem_debug_driver_error_name(driver_error) &
        bind(c, name='gpumem_debug_driver_error_name')
      import
      integer(c_int), value :: driver_error
      type(c_ptr) :: gpumem_debug_driver_error_name
    end function
    function gpumem_debug_last_copy_path(path) &
        bind(c, name='gpumem_debug_last_copy_path')
      import
      integer(c_int), intent(out) :: path
      integer(c_int) :: gpumem_debug_last_copy_path
    end function
    function gpumem_copy_path_name(path) &
        bind(c, name='gpumem_copy_path_name')
      import
      integer(c_int), value :: path
      type(c_ptr) :: gpumem_copy_path_name
    end function
    ! ---- gpumem/peer.h
    function gpumem_peer_can_access(device, peer, can) &
        bind(c, name='gpumem_peer_can_access')
      import
      integer(c_int), value :: device
      integer(c_int), value :: peer
      integer(c_int), intent(out) :: can
      integer(c_int) :: gpumem_peer_can_access
    end function
    function gpumem_peer_set_enabled(enabled) &
        bind(c, name='gpumem_peer_set_enabled')
      import
      integer(c_int), value :: enabled
      integer(c_int) :: gpumem_peer_set_enabled
    end function
    function gpumem_peer_enabled(enabled) &
        bind(c, name='gpumem_peer_enabled')
      import
      integer(c_int), intent(out) :: enabled
      integer(c_int) :: gpumem_peer_enabled
    end function
    ! ---- gpumem/trace.h: names end in c_null_char (gpumem_f_cstr)
    function gpumem_trace_start(path, flags) &
        bind(c, name='gpumem_trace_start')
      import
      character(kind=c_char), intent(in) :: path(*)
      integer(c_int), value :: flags
      integer(c_int) :: gpumem_trace_start
    end function
    function gpumem_trace_stop() &
        bind(c, name='gpumem_trace_stop')
      import
      integer(c_int) :: gpumem_trace_stop
    end function
    function gpumem_trace_mark(name) &
        bind(c, name='gpumem_trace_mark')
      import
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int) :: gpumem_trace_mark
    end function
    function gpumem_trace_push(name) &
        bind(c, name='gpumem_trace_push')
      import
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int) :: gpumem_trace_push
    end function
    function gpumem_trace_pop() &
        bind(c, name='gpumem_trace_pop')
      import
      integer(c_int) :: gpumem_trace_pop
    end function
    ! ---- gpumem/staging.h
    function gpumem_staging_get(settings) &
        bind(c, name='gpumem_staging_get')
      import
      type(gpumem_staging_settings), intent(inout) :: settings
      integer(c_int) :: gpumem_staging_get
    end function
    function gpumem_staging_set(settings) &
        bind(c, name='gpumem_staging_set')
      import
      type(gpumem_staging_settings), intent(in) :: settings
      integer(c_int) :: gpumem_staging_set
    end function
    ! ---- gpumem/dtype.h
    function gpumem_dtype_builtin(type) &
        bind(c, name='gpumem_dtype_builtin')
      import
      integer(c_int), value :: type
      type(c_ptr) :: gpumem_dtype_builtin
    end function
    function gpumem_dtype_from_typestr(typestr, dtype) &
        bind(c, name='gpumem_dtype_from_typestr')
      import
      character(kind=c_char), intent(in) :: typestr(*)
      type(c_ptr), intent(out) :: dtype
      integer(c_int) :: gpumem_dtype_from_typestr
    end function
    function gpumem_dtype_typestr(dtype, buf, size) &
        bind(c, name='gpumem_dtype_typestr')
      import
      type(c_ptr), value :: dtype
      character(kind=c_char), intent(out), optional :: buf(*)
      integer(c_size_t), value :: size
      integer(c_int) :: gpumem_dtype_typestr
    end function
    function gpumem_dtype_from_descr(descr, dtype) &
        bind(c, name='gpumem_dtype_from_descr')
      import
      character(kind=c_char), intent(in) :: descr(*)
      type(c_ptr), intent(out) :: dtype
      integer(c_int) :: gpumem_dtype_from_descr
    end function
    function gpumem_dtype_descr(dtype, buf, size) &
        bind(c, name='gpumem_dtype_descr')
      import
      type(c_ptr), value :: dtype
      character(kind=c_char), intent(out), optional :: buf(*)
      integer(c_size_t), value :: size
      integer(c_int) :: gpumem_dtype_descr
    end function
    function gpumem_dtype_record_create(fields, nfields, layout, itemsize, dtype) &
        bind(c, name='gpumem_dtype_record_create')
      import
      type(gpumem_field), intent(in) :: fields(*)
      integer(c_size_t), value :: nfields
      integer(c_int), value :: layout
      integer(c_size_t), value :: itemsize
      type(c_ptr), intent(out) :: dtype
      integer(c_int) :: gpumem_dtype_record_create
    end function
    function gpumem_dtype_retain(dtype) &
        bind(c, name='gpumem_dtype_retain')
      import
      type(c_ptr), value :: dtype
      integer(c_int) :: gpumem_dtype_retain
    end function
    function gpumem_dtype_release(dtype) &
        bind(c, name='gpumem_dtype_release')
      import
      type(c_ptr), value :: dtype
      integer(c_int) :: gpumem_dtype_release
    end function
    function gpumem_dtype_itemsize(dtype, itemsize) &
        bind(c, name='gpumem_dtype_itemsize')
      import
      type(c_ptr), value :: dtype
      integer(c_size_t), intent(out) :: itemsize
      integer(c_int) :: gpumem_dtype_itemsize
    end function
    function gpumem_dtype_alignment(dtype, alignment) &
        bind(c, name='gpumem_dtype_alignment')
      import
      type(c_ptr), value :: dtype
      integer(c_size_t), intent(out) :: alignment
      integer(c_int) :: gpumem_dtype_alignment
    end function
    function gpumem_dtype_type(dtype, type, order) &
        bind(c, name='gpumem_dtype_type')
      import
      type(c_ptr), value :: dtype
      integer(c_int), intent(out), optional :: type
      integer(c_int), intent(out), optional :: order
      integer(c_int) :: gpumem_dtype_type
    end function
    function gpumem_dtype_equal(a, b) &
        bind(c, name='gpumem_dtype_equal')
      import
      type(c_ptr), value :: a
      type(c_ptr), value :: b
      integer(c_int) :: gpumem_dtype_equal
    end function
    function gpumem_dtype_field_count(dtype, count) &
        bind(c, name='gpumem_dtype_field_count')
      import
      type(c_ptr), value :: dtype
      integer(c_size_t), intent(out) :: count
      integer(c_int) :: gpumem_dtype_field_count
    end function
    function gpumem_dtype_field(dtype, index, name, field_dtype, offset, ndim, shape) &
        bind(c, name='gpumem_dtype_field')
      import
      type(c_ptr), value :: dtype
      integer(c_size_t), value :: index
      type(c_ptr), intent(out), optional :: name
      type(c_ptr), intent(out), optional :: field_dtype
      integer(c_int64_t), intent(out), optional :: offset
      integer(c_int), intent(out), optional :: ndim
      integer(c_int64_t), intent(out), optional :: shape(*)
      integer(c_int) :: gpumem_dtype_field
    end function
    function gpumem_dtype_field_index(dtype, name, index) &
        bind(c, name='gpumem_dtype_field_index')
      import
      type(c_ptr), value :: dtype
      character(kind=c_char), intent(in) :: name(*)
      integer(c_size_t), intent(out) :: index(*)
      integer(c_int) :: gpumem_dtype_field_index
    end function
    ! ---- gpumem/host.h
    function gpumem_pinned_array(ctx, ndim, shape, strides, dtype, order, array) &
        bind(c, name='gpumem_pinned_array')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: ndim
      integer(c_int64_t), intent(in) :: shape(*)
      integer(c_int64_t), intent(in), optional :: strides(*)
      type(c_ptr), value :: dtype
      character(kind=c_char), value :: order
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_pinned_array
    end function
    function gpumem_mapped_array(ctx, ndim, shape, strides, dtype, order, stream, flags, array) &
        bind(c, name='gpumem_mapped_array')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: ndim
      integer(c_int64_t), intent(in) :: shape(*)
      integer(c_int64_t), intent(in), optional :: strides(*)
      type(c_ptr), value :: dtype
      character(kind=c_char), value :: order
      type(c_ptr), value :: stream
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_mapped_array
    end function
    function gpumem_managed_array(ctx, ndim, shape, strides, dtype, order, flags, array) &
        bind(c, name='gpumem_managed_array')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: ndim
      integer(c_int64_t), intent(in) :: shape(*)
      integer(c_int64_t), intent(in), optional :: strides(*)
      type(c_ptr), value :: dtype
      character(kind=c_char), value :: order
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_managed_array
    end function
    function gpumem_pinned(ctx, arrays, count, registration) &
        bind(c, name='gpumem_pinned')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), intent(in) :: arrays(*)
      integer(c_size_t), value :: count
      type(c_ptr), intent(out) :: registration
      integer(c_int) :: gpumem_pinned
    end function
    function gpumem_unpinned(registration) &
        bind(c, name='gpumem_unpinned')
      import
      type(c_ptr), intent(inout) :: registration
      integer(c_int) :: gpumem_unpinned
    end function
    function gpumem_mapped(ctx, arrays, count, stream, registration, device_views) &
        bind(c, name='gpumem_mapped')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), intent(in) :: arrays(*)
      integer(c_size_t), value :: count
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: registration
      type(c_ptr), intent(out) :: device_views(*)
      integer(c_int) :: gpumem_mapped
    end function
    function gpumem_unmapped(registration) &
        bind(c, name='gpumem_unmapped')
      import
      type(c_ptr), intent(inout) :: registration
      integer(c_int) :: gpumem_unmapped
    end function
    function gpumem_register(ctx, arrays, count, registration) &
        bind(c, name='gpumem_register')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), intent(in) :: arrays(*)
      integer(c_size_t), value :: count
      type(c_ptr), intent(out) :: registration
      integer(c_int) :: gpumem_register
    end function
    function gpumem_deregister(registration) &
        bind(c, name='gpumem_deregister')
      import
      type(c_ptr), intent(inout) :: registration
      integer(c_int) :: gpumem_deregister
    end function
    function gpumem_host_is_pinned(pointer, bytes, result) &
        bind(c, name='gpumem_host_is_pinned')
      import
      type(c_ptr), value :: pointer
      integer(c_size_t), value :: bytes
      integer(c_int), intent(out) :: result
      integer(c_int) :: gpumem_host_is_pinned
    end function
    ! ---- gpumem/interop.h
    function gpumem_array_interface(array, stream, desc) &
        bind(c, name='gpumem_array_interface')
      import
      type(c_ptr), value :: array
      type(c_ptr), value :: stream
      type(gpumem_cuda_array_interface), intent(inout) :: desc
      integer(c_int) :: gpumem_array_interface
    end function
    function gpumem_as_cuda_array(ctx, desc, flags, release, owner, array) &
        bind(c, name='gpumem_as_cuda_array')
      import
      type(c_ptr), value :: ctx
      type(gpumem_cuda_array_interface), intent(in) :: desc
      integer(c_int), value :: flags
      type(c_funptr), value :: release
      type(c_ptr), value :: owner
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_as_cuda_array
    end function
    function gpumem_array_to_dlpack(array, flags, tensor) &
        bind(c, name='gpumem_array_to_dlpack')
      import
      type(c_ptr), value :: array
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: tensor
      integer(c_int) :: gpumem_array_to_dlpack
    end function
    function gpumem_array_from_dlpack(ctx, tensor, flags, array) &
        bind(c, name='gpumem_array_from_dlpack')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), value :: tensor
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_array_from_dlpack
    end function
    ! ---- gpumem/ipc.h
    function gpumem_is_cuda_array(pointer, result, info) &
        bind(c, name='gpumem_is_cuda_array')
      import
      integer(c_int64_t), value :: pointer
      integer(c_int), intent(out) :: result
      type(gpumem_pointer_info), intent(inout), optional :: info
      integer(c_int) :: gpumem_is_cuda_array
    end function
    function gpumem_ipc_get_handle(array, handle) &
        bind(c, name='gpumem_ipc_get_handle')
      import
      type(c_ptr), value :: array
      type(gpumem_ipc_handle), intent(inout) :: handle
      integer(c_int) :: gpumem_ipc_get_handle
    end function
    function gpumem_ipc_open(ctx, handle, array) &
        bind(c, name='gpumem_ipc_open')
      import
      type(c_ptr), value :: ctx
      type(gpumem_ipc_handle), intent(in) :: handle
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_ipc_open
    end function
    ! ---- gpumem/memo.h
    function gpumem_memoize(ctx, key, key_size, create, destroy, user, value) &
        bind(c, name='gpumem_memoize')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), value :: key
      integer(c_size_t), value :: key_size
      type(c_funptr), value :: create
      type(c_funptr), value :: destroy
      type(c_ptr), value :: user
      type(c_ptr), intent(out) :: value
      integer(c_int) :: gpumem_memoize
    end function
    function gpumem_clear_context_caches() &
        bind(c, name='gpumem_clear_context_caches')
      import
      integer(c_int) :: gpumem_clear_context_caches
    end function
    ! ---- gpumem/module.h
    function gpumem_module_load(ctx, image, size, module) &
        bind(c, name='gpumem_module_load')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), value :: image
      integer(c_size_t), value :: size
      type(c_ptr), intent(out) :: module
      integer(c_int) :: gpumem_module_load
    end function
    function gpumem_module_retain(module) &
        bind(c, name='gpumem_module_retain')
      import
      type(c_ptr), value :: module
      integer(c_int) :: gpumem_module_retain
    end function
    function gpumem_module_release(module) &
        bind(c, name='gpumem_module_release')
      import
      type(c_ptr), value :: module
      integer(c_int) :: gpumem_module_release
    end function
    function gpumem_module_context(module, ctx) &
        bind(c, name='gpumem_module_context')
      import
      type(c_ptr), value :: module
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: gpumem_module_context
    end function
    function gpumem_module_get_function(module, name, func) &
        bind(c, name='gpumem_module_get_function')
      import
      type(c_ptr), value :: module
      character(kind=c_char), intent(in) :: name(*)
      type(c_ptr), intent(out) :: func
      integer(c_int) :: gpumem_module_get_function
    end function
    function gpumem_module_get_global(module, name, pointer, bytes) &
        bind(c, name='gpumem_module_get_global')
      import
      type(c_ptr), value :: module
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int64_t), intent(out), optional :: pointer
      integer(c_size_t), intent(out), optional :: bytes
      integer(c_int) :: gpumem_module_get_global
    end function
    function gpumem_function_name(func, name) &
        bind(c, name='gpumem_function_name')
      import
      type(c_ptr), value :: func
      type(c_ptr), intent(out) :: name
      integer(c_int) :: gpumem_function_name
    end function
    function gpumem_function_module(func, module) &
        bind(c, name='gpumem_function_module')
      import
      type(c_ptr), value :: func
      type(c_ptr), intent(out) :: module
      integer(c_int) :: gpumem_function_module
    end function
    function gpumem_function_attribute(func, attr, value) &
        bind(c, name='gpumem_function_attribute')
      import
      type(c_ptr), value :: func
      integer(c_int), value :: attr
      integer(c_int), intent(out) :: value
      integer(c_int) :: gpumem_function_attribute
    end function
    function gpumem_function_set_attribute(func, attr, value) &
        bind(c, name='gpumem_function_set_attribute')
      import
      type(c_ptr), value :: func
      integer(c_int), value :: attr
      integer(c_int), value :: value
      integer(c_int) :: gpumem_function_set_attribute
    end function
    function gpumem_function_max_active_blocks(func, block_threads, shared_bytes, blocks) &
        bind(c, name='gpumem_function_max_active_blocks')
      import
      type(c_ptr), value :: func
      integer(c_int), value :: block_threads
      integer(c_size_t), value :: shared_bytes
      integer(c_int), intent(out) :: blocks
      integer(c_int) :: gpumem_function_max_active_blocks
    end function
    function gpumem_launch(func, grid, block, shared_bytes, stream, params) &
        bind(c, name='gpumem_launch')
      import
      type(c_ptr), value :: func
      integer(c_int), intent(in) :: grid(3)
      integer(c_int), intent(in) :: block(3)
      integer(c_int), value :: shared_bytes
      type(c_ptr), value :: stream
      type(c_ptr), value :: params
      integer(c_int) :: gpumem_launch
    end function
    function gpumem_const_array_like(module, symbol, array, stream, device_array) &
        bind(c, name='gpumem_const_array_like')
      import
      type(c_ptr), value :: module
      character(kind=c_char), intent(in) :: symbol(*)
      type(c_ptr), value :: array
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: device_array
      integer(c_int) :: gpumem_const_array_like
    end function
    ! ---- gpumem/occupancy.h
    function gpumem_device_data_create(device, dd) &
        bind(c, name='gpumem_device_data_create')
      import
      integer(c_int), value :: device
      type(c_ptr), intent(out) :: dd
      integer(c_int) :: gpumem_device_data_create
    end function
    function gpumem_device_data_destroy(dd) &
        bind(c, name='gpumem_device_data_destroy')
      import
      type(c_ptr), value :: dd
      integer(c_int) :: gpumem_device_data_destroy
    end function
    function gpumem_device_data_get(dd, field, value) &
        bind(c, name='gpumem_device_data_get')
      import
      type(c_ptr), value :: dd
      integer(c_int), value :: field
      integer(c_int), intent(out) :: value
      integer(c_int) :: gpumem_device_data_get
    end function
    function gpumem_device_data_field_name(field) &
        bind(c, name='gpumem_device_data_field_name')
      import
      integer(c_int), value :: field
      type(c_ptr) :: gpumem_device_data_field_name
    end function
    function gpumem_device_data_align_bytes(dd, word_size, bytes) &
        bind(c, name='gpumem_device_data_align_bytes')
      import
      type(c_ptr), value :: dd
      integer(c_size_t), value :: word_size
      integer(c_size_t), intent(out) :: bytes
      integer(c_int) :: gpumem_device_data_align_bytes
    end function
    function gpumem_device_data_align(dd, bytes, word_size, aligned) &
        bind(c, name='gpumem_device_data_align')
      import
      type(c_ptr), value :: dd
      integer(c_size_t), value :: bytes
      integer(c_size_t), value :: word_size
      integer(c_size_t), intent(out) :: aligned
      integer(c_int) :: gpumem_device_data_align
    end function
    function gpumem_device_data_align_words(dd, word_size, words) &
        bind(c, name='gpumem_device_data_align_words')
      import
      type(c_ptr), value :: dd
      integer(c_size_t), value :: word_size
      integer(c_size_t), intent(out) :: words
      integer(c_int) :: gpumem_device_data_align_words
    end function
    function gpumem_device_data_align_dtype(dd, elements, dtype, aligned) &
        bind(c, name='gpumem_device_data_align_dtype')
      import
      type(c_ptr), value :: dd
      integer(c_size_t), value :: elements
      type(c_ptr), value :: dtype
      integer(c_size_t), intent(out) :: aligned
      integer(c_int) :: gpumem_device_data_align_dtype
    end function
    function gpumem_make_valid_tex_channel_count(size, count) &
        bind(c, name='gpumem_make_valid_tex_channel_count')
      import
      integer(c_int), value :: size
      integer(c_int), intent(out) :: count
      integer(c_int) :: gpumem_make_valid_tex_channel_count
    end function
    function gpumem_occupancy(dd, threads, shared_mem, registers, record) &
        bind(c, name='gpumem_occupancy')
      import
      type(c_ptr), value :: dd
      integer(c_int), value :: threads
      integer(c_size_t), value :: shared_mem
      integer(c_int), value :: registers
      type(gpumem_occupancy_record), intent(inout) :: record
      integer(c_int) :: gpumem_occupancy
    end function
    function gpumem_occupancy_limit_name(limit) &
        bind(c, name='gpumem_occupancy_limit_name')
      import
      integer(c_int), value :: limit
      type(c_ptr) :: gpumem_occupancy_limit_name
    end function
    ! ---- gpumem/pool.h
    function gpumem_pool_create(ctx, flags, pool) &
        bind(c, name='gpumem_pool_create')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: pool
      integer(c_int) :: gpumem_pool_create
    end function
    function gpumem_pool_create_with_props(ctx, props, pool) &
        bind(c, name='gpumem_pool_create_with_props')
      import
      type(c_ptr), value :: ctx
      type(gpumem_pool_props), intent(in) :: props
      type(c_ptr), intent(out) :: pool
      integer(c_int) :: gpumem_pool_create_with_props
    end function
    function gpumem_pool_trim(pool, keep_bytes) &
        bind(c, name='gpumem_pool_trim')
      import
      type(c_ptr), value :: pool
      integer(c_int64_t), value :: keep_bytes
      integer(c_int) :: gpumem_pool_trim
    end function
    ! ---- gpumem/pool_ipc.h
    function gpumem_pool_ipc_send(pool, socket_fd) &
        bind(c, name='gpumem_pool_ipc_send')
      import
      type(c_ptr), value :: pool
      integer(c_int), value :: socket_fd
      integer(c_int) :: gpumem_pool_ipc_send
    end function
    function gpumem_pool_ipc_open(ctx, socket_fd, import) &
        bind(c, name='gpumem_pool_ipc_open')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: socket_fd
      type(c_ptr), intent(out) :: import
      integer(c_int) :: gpumem_pool_ipc_open
    end function
    function gpumem_pool_import_update(import, socket_fd) &
        bind(c, name='gpumem_pool_import_update')
      import
      type(c_ptr), value :: import
      integer(c_int), value :: socket_fd
      integer(c_int) :: gpumem_pool_import_update
    end function
    function gpumem_pool_import_open_allocation(import, handle, pointer, size) &
        bind(c, name='gpumem_pool_import_open_allocation')
      import
      type(c_ptr), value :: import
      type(gpumem_pool_ipc_handle), intent(in) :: handle
      integer(c_int64_t), intent(out) :: pointer
      integer(c_size_t), intent(out), optional :: size
      integer(c_int) :: gpumem_pool_import_open_allocation
    end function
    function gpumem_pool_import_close(import) &
        bind(c, name='gpumem_pool_import_close')
      import
      type(c_ptr), value :: import
      integer(c_int) :: gpumem_pool_import_close
    end function
    function gpumem_allocation_ipc_handle(alloc, handle) &
        bind(c, name='gpumem_allocation_ipc_handle')
      import
      type(c_ptr), value :: alloc
      type(gpumem_pool_ipc_handle), intent(inout) :: handle
      integer(c_int) :: gpumem_allocation_ipc_handle
    end function
    function gpumem_host_pool_create_with_props(ctx, props, pool) &
        bind(c, name='gpumem_host_pool_create_with_props')
      import
      type(c_ptr), value :: ctx
      type(gpumem_pool_props), intent(in) :: props
      type(c_ptr), intent(out) :: pool
      integer(c_int) :: gpumem_host_pool_create_with_props
    end function
    function gpumem_host_pool_trim(pool, keep_bytes) &
        bind(c, name='gpumem_host_pool_trim')
      import
      type(c_ptr), value :: pool
      integer(c_int64_t), value :: keep_bytes
      integer(c_int) :: gpumem_host_pool_trim
    end function
    function gpumem_pool_destroy(pool) &
        bind(c, name='gpumem_pool_destroy')
      import
      type(c_ptr), value :: pool
      integer(c_int) :: gpumem_pool_destroy
    end function
    function gpumem_pool_allocate(pool, size, stream, alloc) &
        bind(c, name='gpumem_pool_allocate')
      import
      type(c_ptr), value :: pool
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: alloc
      integer(c_int) :: gpumem_pool_allocate
    end function
    function gpumem_pool_block_size(size, block_size) &
        bind(c, name='gpumem_pool_block_size')
      import
      integer(c_size_t), value :: size
      integer(c_size_t), intent(out) :: block_size
      integer(c_int) :: gpumem_pool_block_size
    end function
    function gpumem_pool_context(pool, ctx) &
        bind(c, name='gpumem_pool_context')
      import
      type(c_ptr), value :: pool
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: gpumem_pool_context
    end function
    function gpumem_pool_held_blocks(pool, count) &
        bind(c, name='gpumem_pool_held_blocks')
      import
      type(c_ptr), value :: pool
      integer(c_int64_t), intent(out) :: count
      integer(c_int) :: gpumem_pool_held_blocks
    end function
    function gpumem_pool_active_blocks(pool, count) &
        bind(c, name='gpumem_pool_active_blocks')
      import
      type(c_ptr), value :: pool
      integer(c_int64_t), intent(out) :: count
      integer(c_int) :: gpumem_pool_active_blocks
    end function
    function gpumem_pool_free_held(pool) &
        bind(c, name='gpumem_pool_free_held')
      import
      type(c_ptr), value :: pool
      integer(c_int) :: gpumem_pool_free_held
    end function
    function gpumem_pool_stop_holding(pool) &
        bind(c, name='gpumem_pool_stop_holding')
      import
      type(c_ptr), value :: pool
      integer(c_int) :: gpumem_pool_stop_holding
    end function
    function gpumem_pool_stats(pool, stats) &
        bind(c, name='gpumem_pool_stats')
      import
      type(c_ptr), value :: pool
      type(gpumem_pool_stats_t), intent(inout) :: stats
      integer(c_int) :: gpumem_pool_stats
    end function
    function gpumem_allocation_pointer(alloc, pointer) &
        bind(c, name='gpumem_allocation_pointer')
      import
      type(c_ptr), value :: alloc
      integer(c_int64_t), intent(out) :: pointer
      integer(c_int) :: gpumem_allocation_pointer
    end function
    function gpumem_allocation_host_pointer(alloc, pointer) &
        bind(c, name='gpumem_allocation_host_pointer')
      import
      type(c_ptr), value :: alloc
      type(c_ptr), intent(out) :: pointer
      integer(c_int) :: gpumem_allocation_host_pointer
    end function
    function gpumem_allocation_size(alloc, size) &
        bind(c, name='gpumem_allocation_size')
      import
      type(c_ptr), value :: alloc
      integer(c_size_t), intent(out) :: size
      integer(c_int) :: gpumem_allocation_size
    end function
    function gpumem_allocation_free(alloc, stream) &
        bind(c, name='gpumem_allocation_free')
      import
      type(c_ptr), value :: alloc
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_allocation_free
    end function
    function gpumem_host_pool_create(ctx, flags, pool) &
        bind(c, name='gpumem_host_pool_create')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: pool
      integer(c_int) :: gpumem_host_pool_create
    end function
    function gpumem_host_pool_destroy(pool) &
        bind(c, name='gpumem_host_pool_destroy')
      import
      type(c_ptr), value :: pool
      integer(c_int) :: gpumem_host_pool_destroy
    end function
    function gpumem_host_pool_allocate_bytes(pool, size, alloc) &
        bind(c, name='gpumem_host_pool_allocate_bytes')
      import
      type(c_ptr), value :: pool
      integer(c_size_t), value :: size
      type(c_ptr), intent(out) :: alloc
      integer(c_int) :: gpumem_host_pool_allocate_bytes
    end function
    function gpumem_host_pool_context(pool, ctx) &
        bind(c, name='gpumem_host_pool_context')
      import
      type(c_ptr), value :: pool
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: gpumem_host_pool_context
    end function
    function gpumem_host_pool_held_blocks(pool, count) &
        bind(c, name='gpumem_host_pool_held_blocks')
      import
      type(c_ptr), value :: pool
      integer(c_int64_t), intent(out) :: count
      integer(c_int) :: gpumem_host_pool_held_blocks
    end function
    function gpumem_host_pool_active_blocks(pool, count) &
        bind(c, name='gpumem_host_pool_active_blocks')
      import
      type(c_ptr), value :: pool
      integer(c_int64_t), intent(out) :: count
      integer(c_int) :: gpumem_host_pool_active_blocks
    end function
    function gpumem_host_pool_free_held(pool) &
        bind(c, name='gpumem_host_pool_free_held')
      import
      type(c_ptr), value :: pool
      integer(c_int) :: gpumem_host_pool_free_held
    end function
    function gpumem_host_pool_stop_holding(pool) &
        bind(c, name='gpumem_host_pool_stop_holding')
      import
      type(c_ptr), value :: pool
      integer(c_int) :: gpumem_host_pool_stop_holding
    end function
    function gpumem_host_pool_stats(pool, stats) &
        bind(c, name='gpumem_host_pool_stats')
      import
      type(c_ptr), value :: pool
      type(gpumem_pool_stats_t), intent(inout) :: stats
      integer(c_int) :: gpumem_host_pool_stats
    end function
    function gpumem_context_set_pool(ctx, pool) &
        bind(c, name='gpumem_context_set_pool')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), value :: pool
      integer(c_int) :: gpumem_context_set_pool
    end function
    function gpumem_pool_device_array(pool, ndim, shape, dtype, order, stream, array) &
        bind(c, name='gpumem_pool_device_array')
      import
      type(c_ptr), value :: pool
      integer(c_int), value :: ndim
      integer(c_int64_t), intent(in) :: shape(*)
      type(c_ptr), value :: dtype
      character(kind=c_char), value :: order
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_pool_device_array
    end function
    function gpumem_host_pool_allocate(pool, ndim, shape, dtype, order, array) &
        bind(c, name='gpumem_host_pool_allocate')
      import
      type(c_ptr), value :: pool
      integer(c_int), value :: ndim
      integer(c_int64_t), intent(in) :: shape(*)
      type(c_ptr), value :: dtype
      character(kind=c_char), value :: order
      type(c_ptr), intent(out) :: array
      integer(c_int) :: gpumem_host_pool_allocate
    end function
    ! ---- gpumem/memory.h
    function gpumem_memory_report(ctx, flags, report) &
        bind(c, name='gpumem_memory_report')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: flags
      type(gpumem_memory_report_t), intent(inout) :: report
      integer(c_int) :: gpumem_memory_report
    end function
    !> the report as text into buf(size), NUL-terminated, as snprintf (size 0 asks for the size needed)
    function gpumem_memory_report_format(report, flags, buf, size, needed) &
        bind(c, name='gpumem_memory_report_format')
      import
      type(gpumem_memory_report_t), intent(in) :: report
      integer(c_int), value :: flags
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: size
      integer(c_size_t), intent(out), optional :: needed
      integer(c_int) :: gpumem_memory_report_format
    end function
    !> file: a C FILE * (type(c_ptr)), such as one a C helper returns
    function gpumem_memory_report_print(report, flags, file) &
        bind(c, name='gpumem_memory_report_print')
      import
      type(gpumem_memory_report_t), intent(in) :: report
      integer(c_int), value :: flags
      type(c_ptr), value :: file
      integer(c_int) :: gpumem_memory_report_print
    end function
    function gpumem_memory_reset_peaks(ctx, flags) &
        bind(c, name='gpumem_memory_reset_peaks')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: flags
      integer(c_int) :: gpumem_memory_reset_peaks
    end function
    function gpumem_memory_pools(ctx, flags, pools, capacity, count) &
        bind(c, name='gpumem_memory_pools')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: flags
      type(gpumem_memory_pool_report), intent(inout), optional :: pools(*)
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(out) :: count
      integer(c_int) :: gpumem_memory_pools
    end function
    !> callback: integer(c_int) function f(ctx, info, user) bind(c), with type(c_ptr), value :: ctx, user
    !> and type(gpumem_oom_info), intent(in) :: info; pass c_funloc(f), or c_null_funptr to remove it.
    function gpumem_context_set_oom_callback(ctx, callback, user) &
        bind(c, name='gpumem_context_set_oom_callback')
      import
      type(c_ptr), value :: ctx
      type(c_funptr), value :: callback
      type(c_ptr), value :: user
      integer(c_int) :: gpumem_context_set_oom_callback
    end function
    ! ---- gpumem/status.h
    function gpumem_status_string(status) &
        bind(c, name='gpumem_status_string')
      import
      integer(c_int), value :: status
      type(c_ptr) :: gpumem_status_string
    end function
    function gpumem_status_description(status) &
        bind(c, name='gpumem_status_description')
      import
      integer(c_int), value :: status
      type(c_ptr) :: gpumem_status_description
    end function
    function gpumem_last_error() &
        bind(c, name='gpumem_last_error')
      import
      type(c_ptr) :: gpumem_last_error
    end function
    function gpumem_last_status() &
        bind(c, name='gpumem_last_status')
      import
      integer(c_int) :: gpumem_last_status
    end function
    function gpumem_last_driver_result() &
        bind(c, name='gpumem_last_driver_result')
      import
      integer(c_int) :: gpumem_last_driver_result
    end function
    ! ---- gpumem/stream.h
    function gpumem_stream_create(ctx, flags, stream) &
        bind(c, name='gpumem_stream_create')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: stream
      integer(c_int) :: gpumem_stream_create
    end function
    function gpumem_stream_destroy(stream) &
        bind(c, name='gpumem_stream_destroy')
      import
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_stream_destroy
    end function
    function gpumem_stream_default(ctx, stream) &
        bind(c, name='gpumem_stream_default')
      import
      type(c_ptr), value :: ctx
      type(c_ptr), intent(out) :: stream
      integer(c_int) :: gpumem_stream_default
    end function
    function gpumem_stream_synchronize(stream) &
        bind(c, name='gpumem_stream_synchronize')
      import
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_stream_synchronize
    end function
    function gpumem_stream_query(stream) &
        bind(c, name='gpumem_stream_query')
      import
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_stream_query
    end function
    function gpumem_stream_context(stream, ctx) &
        bind(c, name='gpumem_stream_context')
      import
      type(c_ptr), value :: stream
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: gpumem_stream_context
    end function
    function gpumem_stream_auto_synchronize_begin(stream) &
        bind(c, name='gpumem_stream_auto_synchronize_begin')
      import
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_stream_auto_synchronize_begin
    end function
    function gpumem_stream_auto_synchronize_end(stream) &
        bind(c, name='gpumem_stream_auto_synchronize_end')
      import
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_stream_auto_synchronize_end
    end function
    function gpumem_context_synchronize(ctx) &
        bind(c, name='gpumem_context_synchronize')
      import
      type(c_ptr), value :: ctx
      integer(c_int) :: gpumem_context_synchronize
    end function
    ! ---- gpumem/event.h
    function gpumem_event_create(ctx, flags, event) &
        bind(c, name='gpumem_event_create')
      import
      type(c_ptr), value :: ctx
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: event
      integer(c_int) :: gpumem_event_create
    end function
    function gpumem_event_destroy(event) &
        bind(c, name='gpumem_event_destroy')
      import
      type(c_ptr), value :: event
      integer(c_int) :: gpumem_event_destroy
    end function
    function gpumem_event_record(event, stream) &
        bind(c, name='gpumem_event_record')
      import
      type(c_ptr), value :: event
      type(c_ptr), value :: stream
      integer(c_int) :: gpumem_event_record
    end function
    function gpumem_event_query(event) &
        bind(c, name='gpumem_event_query')
      import
      type(c_ptr), value :: event
      integer(c_int) :: gpumem_event_query
    end function
    function gpumem_event_synchronize(event) &
        bind(c, name='gpumem_event_synchronize')
      import
      type(c_ptr), value :: event
      integer(c_int) :: gpumem_event_synchronize
    end function
    function gpumem_event_elapsed_time(start, end, ms) &
        bind(c, name='gpumem_event_elapsed_time')
      import
      type(c_ptr), value :: start
      type(c_ptr), value :: end
      real(c_float), intent(out) :: ms
      integer(c_int) :: gpumem_event_elapsed_time
    end function
    function gpumem_stream_wait_event(stream, event) &
        bind(c, name='gpumem_stream_wait_event')
      import
      type(c_ptr), value :: stream
      type(c_ptr), value :: event
      integer(c_int) :: gpumem_stream_wait_event
    end function
    function gpumem_event_context(event, ctx) &
        bind(c, name='gpumem_event_context')
      import
      type(c_ptr), value :: event
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: gpumem_event_context
    end function
    ! ---- gpumem/testing.h
    function gpumem_test_context(ctx, reason, size) &
        bind(c, name='gpumem_test_context')
      import
      type(c_ptr), intent(out) :: ctx
      character(kind=c_char), intent(out), optional :: reason(*)
      integer(c_size_t), value :: size
      integer(c_int) :: gpumem_test_context
    end function
    ! ---- gpumem/version.h
    function gpumem_version() &
        bind(c, name='gpumem_version')
      import
      integer(c_int) :: gpumem_version
    end function
    function gpumem_version_string() &
        bind(c, name='gpumem_version_string')
      import
      type(c_ptr) :: gpumem_version_string
    end function

  end interface


  ! ---- the helpers' generic names ----
  include 'gpumem_generics.inc'
  interface gpumem_f_device_array
    module procedure device_array_shape8
    module procedure device_array_shape4
  end interface gpumem_f_device_array
  interface gpumem_f_pinned_array
    module procedure pinned_array_shape8
    module procedure pinned_array_shape4
  end interface gpumem_f_pinned_array

contains

  !> A C string (const char *) as a Fortran string; '' for c_null_ptr.
  function gpumem_f_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: c(:)
    integer :: n, i
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    call c_f_pointer(p, c, [huge(0)])  ! read up to the terminating NUL only
    n = 0
    do while (c(n + 1) /= c_null_char)
      n = n + 1
    end do
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = c(i)
    end do
  end function gpumem_f_string

  !> s followed by c_null_char, for the C API's string arguments.
  pure function gpumem_f_cstr(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len(s) + 1) :: c
    c = s // c_null_char
  end function gpumem_f_cstr

  !> gpumem_last_error() as a Fortran string.
  function gpumem_f_last_error() result(s)
    character(len=:), allocatable :: s
    s = gpumem_f_string(gpumem_last_error())
  end function gpumem_f_last_error

  !> gpumem_status_string(status) as a Fortran string, such as 'GPUMEM_ERROR_OUT_OF_MEMORY'.
  function gpumem_f_status_string(status) result(s)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: s
    s = gpumem_f_string(gpumem_status_string(status))
  end function gpumem_f_status_string

  !> gpumem_test_should_skip of <gpumem/testing.h>: the failure of gpumem_test_context means no usable GPU.
  pure logical function gpumem_test_should_skip(status)
    integer(c_int), intent(in) :: status
    gpumem_test_should_skip = status == GPUMEM_ERROR_DRIVER_NOT_FOUND .or. status == GPUMEM_ERROR_NO_DEVICE &
        .or. status == GPUMEM_ERROR_DEVICE_UNAVAILABLE
  end function gpumem_test_should_skip

  !> The gpumem_slice that selects what the Fortran section lower:upper:stride selects (stride 1 if absent).
  elemental function gpumem_f_section(lower, upper, stride) result(s)
    integer, intent(in) :: lower, upper
    integer, intent(in), optional :: stride
    type(gpumem_slice) :: s
    s%step = 1
    if (present(stride)) s%step = stride
    s%start = lower - 1
    if (s%step >= 0) then
      s%stop = upper
    else if (upper <= 1) then
      s%stop = GPUMEM_SLICE_DEFAULT  ! down to the first element
    else
      s%stop = upper - 2
    end if
  end function gpumem_f_section

  !> numba's device_array in Fortran order: gpumem_device_array(ctx, size(shape), shape, NULL,
  !> gpumem_dtype_builtin(type), 'F', stream, array); shape of kind c_int64_t or c_int32_t.
  function device_array_shape8(ctx, shape, type, array, stream, errmsg) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int64_t), intent(in) :: shape(:)
    integer(c_int), intent(in) :: type
    type(c_ptr), intent(out) :: array
    type(c_ptr), intent(in), optional :: stream
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    type(c_ptr) :: s, dt
    array = c_null_ptr
    dt = gpumem_dtype_builtin(type)
    if (.not. c_associated(dt)) then  ! an unknown type: its own status and message, not a NULL dtype's
      st = gpumem_last_status()
      call set_errmsg(errmsg, 'gpumem_f_device_array: ' // gpumem_f_last_error())
      return
    end if
    s = c_null_ptr
    if (present(stream)) s = stream
    st = gpumem_device_array(ctx, size(shape, kind=c_int), shape, dtype=dt, order='F', stream=s, array=array)
    call c_errmsg(st, errmsg)
  end function device_array_shape8

  function device_array_shape4(ctx, shape, type, array, stream, errmsg) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int32_t), intent(in) :: shape(:)
    integer(c_int), intent(in) :: type
    type(c_ptr), intent(out) :: array
    type(c_ptr), intent(in), optional :: stream
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    st = device_array_shape8(ctx, int(shape, c_int64_t), type, array, stream, errmsg)
  end function device_array_shape4

  !> numba's pinned_array in Fortran order, from a Fortran shape and type: gpumem_pinned_array(ctx,
  !> size(shape), shape, NULL, gpumem_dtype_builtin(type), 'F', array), so that gpumem_f_pointer
  !> gives a pointer of that shape onto it; shape of kind c_int64_t or c_int32_t.
  function pinned_array_shape8(ctx, shape, type, array, errmsg) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int64_t), intent(in) :: shape(:)
    integer(c_int), intent(in) :: type
    type(c_ptr), intent(out) :: array
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    type(c_ptr) :: dt
    array = c_null_ptr
    dt = gpumem_dtype_builtin(type)
    if (.not. c_associated(dt)) then
      st = gpumem_last_status()
      call set_errmsg(errmsg, 'gpumem_f_pinned_array: ' // gpumem_f_last_error())
      return
    end if
    st = gpumem_pinned_array(ctx, size(shape, kind=c_int), shape, dtype=dt, order='F', array=array)
    call c_errmsg(st, errmsg)
  end function pinned_array_shape8

  function pinned_array_shape4(ctx, shape, type, array, errmsg) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int32_t), intent(in) :: shape(:)
    integer(c_int), intent(in) :: type
    type(c_ptr), intent(out) :: array
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    st = pinned_array_shape8(ctx, int(shape, c_int64_t), type, array, errmsg)
  end function pinned_array_shape4

  ! ---- the helpers' common part ----

  pure function addr(p) result(a)
    type(c_ptr), intent(in) :: p
    integer(c_int64_t) :: a
    a = transfer(p, a)
  end function addr

  ! The strides the layout could not measure (axes of extent 1, or every axis of an
  ! empty array) are those of an F-ordered array: any value describes such an axis.
  subroutine fill_strides(l, itemsize)
    type(f_layout), intent(inout) :: l
    integer(c_int64_t), intent(in) :: itemsize
    integer(c_int64_t) :: s
    integer :: j
    logical :: empty
    if (l%ndim < 1 .or. l%ndim > layout_max_rank) return
    empty = any(l%shape(1:l%ndim) == 0)
    s = itemsize
    do j = 1, l%ndim
      if (empty .or. l%shape(j) <= 1) l%strides(j) = s
      s = s * max(l%shape(j), 1_c_int64_t)
    end do
  end subroutine fill_strides

  subroutine set_errmsg(errmsg, message)
    character(len=*), intent(out), optional :: errmsg
    character(len=*), intent(in) :: message
    if (present(errmsg)) errmsg = message
  end subroutine set_errmsg

  ! errmsg gets the C library's message when status is a failure, else ''.
  subroutine c_errmsg(status, errmsg)
    integer(c_int), intent(in) :: status
    character(len=*), intent(out), optional :: errmsg
    if (status /= GPUMEM_OK) then
      call set_errmsg(errmsg, gpumem_f_last_error())
    else
      call set_errmsg(errmsg, '')
    end if
  end subroutine c_errmsg

  ! errmsg for the failure of a call that helper `what` made on its own to examine its argument
  ! `arg` (the array's dtype, rank, shape, host pointer): the C library's message with the helper
  ! named in place of that call and the argument by its name in the helper, so that a released
  ! array reads "gpumem_f_copy_to_host: 'src' was released already (a dead array handle)", the
  ! call the user made, not the internal gpumem_array_dtype.  '' when status is GPUMEM_OK.
  subroutine arg_errmsg(status, what, arg, errmsg)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what, arg
    character(len=*), intent(out), optional :: errmsg
    character(len=:), allocatable :: m
    integer :: i
    if (status == GPUMEM_OK) then
      call set_errmsg(errmsg, '')
      return
    end if
    m = gpumem_f_last_error()
    i = index(m, ': ')
    if (index(m, 'gpumem_') == 1 .and. i > 0) m = m(i + 2:)
    i = index(m, "'array'")
    if (i > 0) m = m(1:i - 1) // "'" // arg // "'" // m(i + 7:)
    call set_errmsg(errmsg, what // ': ' // m)
  end subroutine arg_errmsg

  function wrap_layout(l, type, what, array, errmsg) result(st)
    type(f_layout), intent(in) :: l
    integer(c_int), intent(in) :: type
    character(len=*), intent(in) :: what
    type(c_ptr), intent(out) :: array
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    character(len=12) :: r
    array = c_null_ptr
    if (l%ndim < 0 .or. l%ndim > layout_max_rank) then
      write (r, '(i0)') l%ndim
      st = GPUMEM_ERROR_NOT_SUPPORTED
      call set_errmsg(errmsg, what // ': the helpers take arrays of rank 0 to 7, not an assumed-size array or more')
      return
    end if
    st = gpumem_host_array_wrap(l%data, l%ndim, l%shape, l%strides, gpumem_dtype_builtin(type), array)
    call c_errmsg(st, errmsg)
  end function wrap_layout

  function to_device_layout(ctx, l, type, array, stream, flags, errmsg) result(st)
    type(c_ptr), intent(in) :: ctx
    type(f_layout), intent(in) :: l
    integer(c_int), intent(in) :: type
    type(c_ptr), intent(out) :: array
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(in), optional :: flags
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st, ignored, f
    type(c_ptr) :: h, s
    array = c_null_ptr
    st = wrap_layout(l, type, 'gpumem_f_to_device', h, errmsg)
    if (st /= GPUMEM_OK) return
    s = c_null_ptr
    if (present(stream)) s = stream
    f = 0
    if (present(flags)) f = flags
    st = gpumem_to_device(ctx, h, s, f, array)
    call c_errmsg(st, errmsg)
    ignored = gpumem_array_release(h)  ! a write-back keeps its own reference
  end function to_device_layout

  function copy_layout(array, l, type, to_host, stream, errmsg) result(st)
    type(c_ptr), intent(in) :: array
    type(f_layout), intent(in) :: l
    integer(c_int), intent(in) :: type
    logical, intent(in) :: to_host
    type(c_ptr), intent(in), optional :: stream
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st, ignored
    type(c_ptr) :: h, s
    if (to_host) then
      st = dtype_check(array, 'src', type, 'gpumem_f_copy_to_host', 'the Fortran array''s', errmsg)
      if (st == GPUMEM_OK) st = wrap_layout(l, type, 'gpumem_f_copy_to_host', h, errmsg)
    else
      st = dtype_check(array, 'dst', type, 'gpumem_f_copy_to_device', 'the Fortran array''s', errmsg)
      if (st == GPUMEM_OK) st = wrap_layout(l, type, 'gpumem_f_copy_to_device', h, errmsg)
    end if
    if (st /= GPUMEM_OK) return
    s = c_null_ptr
    if (present(stream)) s = stream
    if (to_host) then
      st = gpumem_copy_to_host(array, h, s)
    else
      st = gpumem_copy_to_device(array, h, s)
    end if
    call c_errmsg(st, errmsg)
    ignored = gpumem_array_release(h)
  end function copy_layout

  ! A dtype as Fortran declares it: 'real(kind=4)', 'integer(kind=8)', 'complex(kind=8)',
  ! 'logical(kind=1)' (the kinds are this compiler's c_float, c_int64_t, ...), with the byte order
  ! when it is not the machine's; a dtype that has no interoperable Fortran type is named by its
  ! NumPy typestr ('<u4, which Fortran has no type for').
  function fortran_type_name(dt) result(s)
    type(c_ptr), intent(in) :: dt
    character(len=:), allocatable :: s
    integer(c_int) :: t, order, native
    character(len=24) :: ts
    character(len=40) :: k
    ts = ''
    if (gpumem_dtype_typestr(dt, ts, 24_c_size_t) /= GPUMEM_OK) ts = '?'
    ts = ts(1:max(index(ts, c_null_char) - 1, 0))
    if (gpumem_dtype_type(dt, type=t, order=order) /= GPUMEM_OK) then
      s = trim(ts)
      return
    end if
    k = ''
    select case (t)
    case (GPUMEM_BOOL)
      write (k, '(a, i0, a)') 'logical(kind=', c_bool, ')'
    case (GPUMEM_INT8)
      write (k, '(a, i0, a)') 'integer(kind=', c_int8_t, ')'
    case (GPUMEM_INT16)
      write (k, '(a, i0, a)') 'integer(kind=', c_int16_t, ')'
    case (GPUMEM_INT32)
      write (k, '(a, i0, a)') 'integer(kind=', c_int32_t, ')'
    case (GPUMEM_INT64)
      write (k, '(a, i0, a)') 'integer(kind=', c_int64_t, ')'
    case (GPUMEM_FLOAT32)
      write (k, '(a, i0, a)') 'real(kind=', c_float, ')'
    case (GPUMEM_FLOAT64)
      write (k, '(a, i0, a)') 'real(kind=', c_double, ')'
    case (GPUMEM_COMPLEX64)
      write (k, '(a, i0, a)') 'complex(kind=', c_float_complex, ')'
    case (GPUMEM_COMPLEX128)
      write (k, '(a, i0, a)') 'complex(kind=', c_double_complex, ')'
    end select
    if (k == '') then
      s = trim(ts) // ', which Fortran has no type for'
      return
    end if
    native = order
    if (gpumem_dtype_type(gpumem_dtype_builtin(t), order=native) /= GPUMEM_OK) native = order
    if (order /= native) then
      s = trim(k) // ' in the other byte order (' // trim(ts) // ')'
    else
      s = trim(k)
    end if
  end function fortran_type_name

  ! GPUMEM_ERROR_DTYPE_MISMATCH unless the array's dtype is the builtin `type` (the Fortran
  ! variable's), with a message naming both as Fortran types; `arg` is the array's name in the
  ! helper `what` (a released array fails here, named so).
  function dtype_check(array, arg, type, what, whose, errmsg) result(st)
    type(c_ptr), intent(in) :: array
    character(len=*), intent(in) :: arg
    integer(c_int), intent(in) :: type
    character(len=*), intent(in) :: what, whose
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st
    type(c_ptr) :: dt
    st = gpumem_array_dtype(array, dt)
    if (st /= GPUMEM_OK) then
      call arg_errmsg(st, what, arg, errmsg)
      return
    end if
    if (gpumem_dtype_equal(dt, gpumem_dtype_builtin(type)) == 1) then
      call set_errmsg(errmsg, '')
      return
    end if
    st = GPUMEM_ERROR_DTYPE_MISMATCH
    call set_errmsg(errmsg, what // ': the array''s dtype is ' // fortran_type_name(dt) // ', ' // whose // &
        ' ' // fortran_type_name(gpumem_dtype_builtin(type)))
  end function dtype_check

  ! The checks of gpumem_f_get_item and gpumem_f_set_item: one Fortran (1-based) index per
  ! dimension, each inside its extent, and a value of the array's dtype; c gets the library's
  ! (0-based) indices.
  function item_check(array, index, type, what, c, errmsg) result(st)
    type(c_ptr), intent(in) :: array
    integer(c_int64_t), intent(in) :: index(:)
    integer(c_int), intent(in) :: type
    character(len=*), intent(in) :: what
    integer(c_int64_t), intent(out) :: c(GPUMEM_MAX_NDIM)
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st, nd
    integer(c_int64_t) :: shp(GPUMEM_MAX_NDIM)
    character(len=200) :: m
    integer :: k
    c = 0
    shp = 0
    st = gpumem_array_ndim(array, nd)
    if (st == GPUMEM_OK) st = gpumem_array_shape(array, shp)
    if (st /= GPUMEM_OK) then
      call arg_errmsg(st, what, 'array', errmsg)
      return
    end if
    if (size(index) /= nd) then
      st = GPUMEM_ERROR_INVALID_VALUE
      write (m, '(a, a, i0, a, i0, a)') what, ': ', size(index), ' indices for an array of ', nd, &
          ' dimensions (one per dimension)'
      call set_errmsg(errmsg, trim(m))
      return
    end if
    do k = 1, nd
      if (index(k) < 1 .or. index(k) > shp(k)) then
        st = GPUMEM_ERROR_INDEX_OUT_OF_RANGE
        write (m, '(a, a, i0, a, i0, a, i0)') what, ': index(', k, ') = ', index(k), ' is out of range 1:', shp(k)
        call set_errmsg(errmsg, trim(m))
        return
      end if
      c(k) = index(k) - 1
    end do
    st = dtype_check(array, 'array', type, what, 'the value''s', errmsg)
  end function item_check

  ! Checks that a pointer of rank r and element type `type` (itemsize bytes) can view the array:
  ! host-side memory, the same rank, dtype and native byte order, F-contiguous.
  function view_check(array, r, type, itemsize, host, shp, errmsg) result(st)
    type(c_ptr), intent(in) :: array
    integer, intent(in) :: r
    integer(c_int), intent(in) :: type
    integer(c_int64_t), intent(in) :: itemsize
    type(c_ptr), intent(out) :: host
    integer(c_int64_t), intent(out) :: shp(layout_max_rank)
    character(len=*), intent(out), optional :: errmsg
    integer(c_int) :: st, nd, t, order, native, fc
    integer(c_size_t) :: isz
    type(c_ptr) :: dt
    character(len=160) :: m
    host = c_null_ptr
    shp = 0
    st = gpumem_array_host_pointer(array, host)
    if (st == GPUMEM_OK) st = gpumem_array_ndim(array, nd)
    if (st == GPUMEM_OK) st = gpumem_array_dtype(array, dt)
    if (st == GPUMEM_OK) st = gpumem_dtype_type(dt, type=t, order=order)
    if (st == GPUMEM_OK) st = gpumem_dtype_type(gpumem_dtype_builtin(type), order=native)
    if (st == GPUMEM_OK) st = gpumem_dtype_itemsize(dt, isz)
    if (st == GPUMEM_OK) st = gpumem_array_is_f_contiguous(array, fc)
    if (st /= GPUMEM_OK) then
      call arg_errmsg(st, 'gpumem_f_pointer', 'array', errmsg)
      return
    end if
    if (nd /= r) then
      st = GPUMEM_ERROR_SHAPE_MISMATCH
      write (m, '(a, i0, a, i0)') 'gpumem_f_pointer: the array has ', nd, ' dimensions, the pointer ', r
      call set_errmsg(errmsg, trim(m))
    else if (t /= type .or. int(isz, c_int64_t) /= itemsize .or. order /= native) then
      st = GPUMEM_ERROR_DTYPE_MISMATCH
      call set_errmsg(errmsg, "gpumem_f_pointer: the array's dtype is " // fortran_type_name(dt) // &
          ", the pointer's " // fortran_type_name(gpumem_dtype_builtin(type)))
    else if (fc == 0) then
      st = GPUMEM_ERROR_COPY_REQUIRED
      call set_errmsg(errmsg, 'gpumem_f_pointer: the array is not F-contiguous (view a C-ordered array through ' &
          // 'gpumem_array_transpose, or copy a strided one)')
    else if (nd > 0) then
      st = gpumem_array_shape(array, shp)
      call c_errmsg(st, errmsg)
    else
      call set_errmsg(errmsg, '')
    end if
  end function view_check

  ! ---- the helpers' type-specific procedures ----
  include 'gpumem_typed.inc'

end module gpumem
