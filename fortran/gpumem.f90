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
  include 'gpumem_constants.inc'

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
    include 'gpumem_c_api1.inc'
    include 'gpumem_c_api2.inc'
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
