! test-promises-fortran.f90 - the gpumem module checked against the promises
! of its own header comment, as an outside user reads them: pointer
! arguments that C allows to be NULL are optional, every helper returns a
! status and fills errmsg (the message of a failure, '' on success), element
! types are named as Fortran declares them, gpumem_f_section selects what the
! Fortran section selects, gpumem_f_pointer leaves a disassociated pointer on
! failure, a released array is named as the helper's argument in the
! helper's message (not by the internal call that found it), and the
! statuses are named constants, one for each status of gpumem/status.h.
! TAP, on the simulator.
! (Every call is a statement of its own: Fortran may evaluate the operands of
! .and. in any order, or not at all.)
program test_promises_fortran
  use, intrinsic :: iso_c_binding
  use gpumem
  implicit none
  integer, parameter :: planned = 37
  integer :: n_run = 0, n_failed = 0
  type(c_ptr) :: ctx, d, h
  integer(c_int) :: st, ign
  character(len=256) :: why, msg
  integer :: i

  st = gpumem_test_context(ctx, why, int(len(why), c_size_t))
  if (st /= GPUMEM_OK) then
    if (gpumem_test_should_skip(st)) then
      print '(a, a)', '1..0 # SKIP ', trim(why(1:max(index(why, c_null_char) - 1, 0)))
      stop
    end if
    print '(a)', 'Bail out! gpumem_test_context failed'
    error stop 1
  end if
  print '(a, i0)', '1..', planned

  ! ---- "pointer arguments that C allows to be NULL ... are optional": the index of a 0-d array ----
  block
    real(c_double) :: x, y
    st = gpumem_f_device_array(ctx, [integer(c_int64_t) ::], GPUMEM_FLOAT64, d)
    call ok(st == GPUMEM_OK, 'gpumem_f_device_array of shape [] (0-d)')
    x = 2.5_c_double
    st = gpumem_array_set_item(d, value=x, stream=c_null_ptr)
    call ok(st == GPUMEM_OK, 'gpumem_array_set_item of a 0-d array with its index left out (NULL)')
    y = 0
    st = gpumem_array_get_item(d, value=y, stream=c_null_ptr)
    call ok(st == GPUMEM_OK, 'gpumem_array_get_item of a 0-d array with its index left out (NULL)')
    call ok(y == 2.5_c_double, '... reads back the element written')
    ign = gpumem_array_release(d)
  end block

  ! ---- the other pointer arguments C allows to be NULL (with a count of 0) ----
  block
    type(c_ptr) :: dt, c2, one, v0
    integer(c_int) :: nd
    real(c_double) :: x
    v0 = c_null_ptr
    dt = gpumem_dtype_builtin(GPUMEM_FLOAT32)
    st = gpumem_dtype_typestr(dt, size=0_c_size_t)
    msg = gpumem_f_last_error()
    call ok(st == GPUMEM_ERROR_INVALID_VALUE .and. index(msg, '4') > 0, &
        'gpumem_dtype_typestr with buf left out and size 0: the bytes it needs')
    st = gpumem_test_context(c2, size=0_c_size_t)
    call ok(st == GPUMEM_OK .and. c_associated(c2), 'gpumem_test_context with reason left out')
    if (st == GPUMEM_OK) ign = gpumem_context_release(c2)
    st = gpumem_f_device_array(ctx, [1], GPUMEM_FLOAT64, one)
    x = 4.5_c_double
    if (st == GPUMEM_OK) st = gpumem_array_set_item(one, [0_c_int64_t], x, c_null_ptr)
    if (st == GPUMEM_OK) st = gpumem_array_reshape(one, 0_c_int, order='C', flags=0_c_int, stream=c_null_ptr, &
        result=v0)
    nd = -1
    if (st == GPUMEM_OK) st = gpumem_array_ndim(v0, nd)
    x = 0
    if (st == GPUMEM_OK) st = gpumem_array_get_item_n(v0, 0_c_int, value=x, stream=c_null_ptr)
    call ok(st == GPUMEM_OK .and. nd == 0 .and. x == 4.5_c_double, &
        'gpumem_array_reshape to 0-d with shape left out; gpumem_array_get_item_n with index left out')
    if (c_associated(v0)) ign = gpumem_array_release(v0)
    st = gpumem_array_slice(one, nslices=0_c_int, view=v0)
    nd = -1
    if (st == GPUMEM_OK) st = gpumem_array_ndim(v0, nd)
    call ok(st == GPUMEM_OK .and. nd == 1, 'gpumem_array_slice with slices left out (no slices: the whole array)')
    if (st == GPUMEM_OK) ign = gpumem_array_release(v0)
    ign = gpumem_array_release(one)
  end block

  ! ---- errmsg: the failure's message, '' on success; statuses of the helpers ----
  block
    real(c_double), target :: a(6), b(6), c8(1, 1, 1, 1, 1, 1, 1, 2)
    real(c_float), target :: f(6)
    real(c_double), pointer :: p(:) => null()
    real(c_double), pointer :: p2(:, :) => null()
    real(c_double) :: e
    a = [(real(i, c_double), i = 1, 6)]
    msg = 'stale'
    st = gpumem_f_to_device(ctx, a, d, errmsg=msg)
    call ok(st == GPUMEM_OK .and. msg == '', 'gpumem_f_to_device: GPUMEM_OK and errmsg ''''')
    msg = 'stale'
    st = gpumem_f_copy_to_host(d, f, errmsg=msg)
    call ok(st == GPUMEM_ERROR_DTYPE_MISMATCH .and. index(msg, 'real(kind=8)') > 0 .and. &
        index(msg, 'real(kind=4)') > 0 .and. index(msg, 'gpumem_f_copy_to_host') > 0, &
        'gpumem_f_copy_to_host into real(c_float) from a float64 array: the Fortran types named')
    msg = 'stale'
    st = gpumem_f_get_item(d, [7], e, errmsg=msg)
    call ok(st == GPUMEM_ERROR_INDEX_OUT_OF_RANGE .and. index(msg, '1:6') > 0, &
        'gpumem_f_get_item at 7 of 6: GPUMEM_ERROR_INDEX_OUT_OF_RANGE naming the range')
    msg = 'stale'
    st = gpumem_f_get_item(d, [1, 1], e, errmsg=msg)
    call ok(st == GPUMEM_ERROR_INVALID_VALUE .and. index(msg, '2 indices') > 0, &
        'gpumem_f_get_item with 2 indices of a 1-d array: GPUMEM_ERROR_INVALID_VALUE')
    msg = 'stale'
    st = gpumem_f_get_item(d, [6_c_int64_t], e, errmsg=msg)
    call ok(st == GPUMEM_OK .and. e == 6 .and. msg == '', 'gpumem_f_get_item(d, [6]) reads a(6), errmsg ''''')
    msg = 'stale'
    st = gpumem_f_pointer(d, p, errmsg=msg)
    call ok(st /= GPUMEM_OK .and. .not. associated(p) .and. msg /= '' .and. msg /= 'stale', &
        'gpumem_f_pointer of a device array fails, the pointer disassociated, errmsg set')
    msg = 'stale'
    st = gpumem_f_wrap(c8, h, errmsg=msg)
    call ok(st == GPUMEM_ERROR_NOT_SUPPORTED .and. .not. c_associated(h) .and. index(msg, 'rank') > 0, &
        'gpumem_f_wrap of a rank-8 array: GPUMEM_ERROR_NOT_SUPPORTED ("rank 0 to 7"), no handle')
    msg = 'stale'
    st = gpumem_f_copy_to_host(d, b(1:3), errmsg=msg)
    call ok(st == GPUMEM_ERROR_SHAPE_MISMATCH .and. index(msg, 'gpumem_copy_to_host') > 0, &
        'gpumem_f_copy_to_host into 3 of 6: the C library''s status and message')
    b = 0
    st = gpumem_f_copy_to_host(d, b, errmsg=msg)
    call ok(st == GPUMEM_OK .and. all(b == a) .and. msg == '', 'gpumem_f_copy_to_host of the whole array')
    ign = gpumem_array_release(d)
    ! a pinned array: gpumem_f_pointer of another rank fails and leaves p2 disassociated
    st = gpumem_f_pinned_array(ctx, [6], GPUMEM_FLOAT64, h, errmsg=msg)
    call ok(st == GPUMEM_OK .and. msg == '', 'gpumem_f_pinned_array(ctx, [6], GPUMEM_FLOAT64)')
    st = gpumem_f_pointer(h, p2, errmsg=msg)
    call ok(st == GPUMEM_ERROR_SHAPE_MISMATCH .and. .not. associated(p2) .and. index(msg, 'dimensions') > 0, &
        'gpumem_f_pointer of rank 2 onto a 1-d array: GPUMEM_ERROR_SHAPE_MISMATCH, disassociated')
    st = gpumem_f_pointer(h, p, errmsg=msg)
    call ok(st == GPUMEM_OK .and. associated(p) .and. size(p) == 6 .and. msg == '', &
        'gpumem_f_pointer of rank 1 onto it')
    ign = gpumem_array_release(h)
  end block

  ! ---- an unknown gpumem type: both array makers fail alike, naming the type ----
  block
    msg = 'stale'
    st = gpumem_f_pinned_array(ctx, [4], 999_c_int, h, errmsg=msg)
    call ok(st == GPUMEM_ERROR_INVALID_VALUE .and. .not. c_associated(h) .and. index(msg, '999') > 0, &
        'gpumem_f_pinned_array of type 999: GPUMEM_ERROR_INVALID_VALUE naming 999')
    msg = 'stale'
    st = gpumem_f_device_array(ctx, [4], 999_c_int, d, errmsg=msg)
    call ok(st == GPUMEM_ERROR_INVALID_VALUE .and. .not. c_associated(d) .and. index(msg, '999') > 0, &
        'gpumem_f_device_array of type 999: GPUMEM_ERROR_INVALID_VALUE naming 999')
  end block

  ! ---- a released array: the helper called names it, not the C call that examined it (issue 26) ----
  block
    real(c_double), target :: a(4), b(4)
    real(c_double) :: e
    real(c_double), pointer :: p(:) => null()
    type(c_ptr) :: gone
    a = 1
    st = gpumem_f_to_device(ctx, a, gone)
    ign = gpumem_array_release(gone)
    st = gpumem_f_copy_to_host(gone, b, errmsg=msg)
    call released_is(st, msg, "gpumem_f_copy_to_host: 'src' was released", 'gpumem_f_copy_to_host')
    st = gpumem_f_copy_to_device(gone, a, errmsg=msg)
    call released_is(st, msg, "gpumem_f_copy_to_device: 'dst' was released", 'gpumem_f_copy_to_device')
    st = gpumem_f_get_item(gone, [1], e, errmsg=msg)
    call released_is(st, msg, "gpumem_f_get_item: 'array' was released", 'gpumem_f_get_item')
    st = gpumem_f_set_item(gone, [1], e, errmsg=msg)
    call released_is(st, msg, "gpumem_f_set_item: 'array' was released", 'gpumem_f_set_item')
    st = gpumem_f_pinned_array(ctx, [4], GPUMEM_FLOAT64, h)
    ign = gpumem_array_release(h)
    st = gpumem_f_pointer(h, p, errmsg=msg)
    call released_is(st, msg, "gpumem_f_pointer: 'array' was released", 'gpumem_f_pointer')
    call ok(.not. associated(p), '... and the pointer is left disassociated')
  end block

  ! ---- the statuses are named constants: GPUMEM_OK and one GPUMEM_ERROR_* for each status of
  !      gpumem/status.h (their values: tests/test-fortran-abi.sh), each named as C names it ----
  block
    integer(c_int), parameter :: all_statuses(*) = [GPUMEM_OK, GPUMEM_ERROR_NULL_ARGUMENT, &
        GPUMEM_ERROR_INVALID_VALUE, GPUMEM_ERROR_INVALID_ENVIRONMENT, GPUMEM_ERROR_OUT_OF_MEMORY, &
        GPUMEM_ERROR_HOST_OUT_OF_MEMORY, GPUMEM_ERROR_DRIVER_NOT_FOUND, GPUMEM_ERROR_NO_DEVICE, &
        GPUMEM_ERROR_INVALID_DEVICE, GPUMEM_ERROR_DEVICE_UNAVAILABLE, GPUMEM_ERROR_DRIVER, &
        GPUMEM_ERROR_NOT_SUPPORTED, GPUMEM_ERROR_NOT_SIMULATED, GPUMEM_ERROR_NOT_READY, &
        GPUMEM_ERROR_INVALID_STATE, GPUMEM_ERROR_CONTEXT_MISMATCH, GPUMEM_ERROR_OVERFLOW, &
        GPUMEM_ERROR_NEGATIVE_DIMENSION, GPUMEM_ERROR_TOO_MANY_DIMENSIONS, GPUMEM_ERROR_SHAPE_MISMATCH, &
        GPUMEM_ERROR_DTYPE_MISMATCH, GPUMEM_ERROR_INVALID_RESHAPE, GPUMEM_ERROR_COPY_REQUIRED, &
        GPUMEM_ERROR_INVALID_SECTION, GPUMEM_ERROR_INDEX_OUT_OF_RANGE, GPUMEM_ERROR_ZERO_STEP, &
        GPUMEM_ERROR_INVALID_ORDER, GPUMEM_ERROR_INVALID_DTYPE, GPUMEM_ERROR_NOT_FOUND, &
        GPUMEM_ERROR_LAUNCH_FAILED, GPUMEM_ERROR_INTERNAL]
    character(len=32), parameter :: names(*) = [character(len=32) :: 'GPUMEM_OK', 'GPUMEM_ERROR_NULL_ARGUMENT', &
        'GPUMEM_ERROR_INVALID_VALUE', 'GPUMEM_ERROR_INVALID_ENVIRONMENT', 'GPUMEM_ERROR_OUT_OF_MEMORY', &
        'GPUMEM_ERROR_HOST_OUT_OF_MEMORY', 'GPUMEM_ERROR_DRIVER_NOT_FOUND', 'GPUMEM_ERROR_NO_DEVICE', &
        'GPUMEM_ERROR_INVALID_DEVICE', 'GPUMEM_ERROR_DEVICE_UNAVAILABLE', 'GPUMEM_ERROR_DRIVER', &
        'GPUMEM_ERROR_NOT_SUPPORTED', 'GPUMEM_ERROR_NOT_SIMULATED', 'GPUMEM_ERROR_NOT_READY', &
        'GPUMEM_ERROR_INVALID_STATE', 'GPUMEM_ERROR_CONTEXT_MISMATCH', 'GPUMEM_ERROR_OVERFLOW', &
        'GPUMEM_ERROR_NEGATIVE_DIMENSION', 'GPUMEM_ERROR_TOO_MANY_DIMENSIONS', 'GPUMEM_ERROR_SHAPE_MISMATCH', &
        'GPUMEM_ERROR_DTYPE_MISMATCH', 'GPUMEM_ERROR_INVALID_RESHAPE', 'GPUMEM_ERROR_COPY_REQUIRED', &
        'GPUMEM_ERROR_INVALID_SECTION', 'GPUMEM_ERROR_INDEX_OUT_OF_RANGE', 'GPUMEM_ERROR_ZERO_STEP', &
        'GPUMEM_ERROR_INVALID_ORDER', 'GPUMEM_ERROR_INVALID_DTYPE', 'GPUMEM_ERROR_NOT_FOUND', &
        'GPUMEM_ERROR_LAUNCH_FAILED', 'GPUMEM_ERROR_INTERNAL']
    logical :: named
    character(len=:), allocatable :: got
    named = size(all_statuses) == GPUMEM_STATUS_COUNT
    do i = 1, size(all_statuses)
      got = gpumem_f_status_string(all_statuses(i))
      if (all_statuses(i) /= i - 1 .or. got /= trim(names(i))) then
        named = .false.
        print '(a, a, a, a)', '# ', trim(names(i)), ' is named ', got
      end if
    end do
    call ok(named, 'GPUMEM_OK ... GPUMEM_ERROR_INTERNAL: GPUMEM_STATUS_COUNT named constants, each as C names it')
    got = gpumem_f_status_string(GPUMEM_STATUS_COUNT)
    call ok(got == 'GPUMEM_STATUS_UNKNOWN', &
        'GPUMEM_STATUS_COUNT is past the last status')
  end block

  ! ---- gpumem_f_section selects what the Fortran section selects ----
  call section_is(1, 6, 1)
  call section_is(1, 6, 2)
  call section_is(6, 1, -1)
  call section_is(5, 2, -1)
  call section_is(6, 2, -2)
  call section_is(2, 5, 3)

  ! ---- gpumem_f_string of c_null_ptr ----
  block
    character(len=:), allocatable :: empty
    empty = gpumem_f_string(c_null_ptr)
    call ok(len(empty) == 0, 'gpumem_f_string(c_null_ptr) is ''''')
  end block

  ign = gpumem_context_release(ctx)
  if (n_run /= planned) then
    print '(a, i0, a, i0)', '# planned ', planned, ' tests but ran ', n_run
    error stop 1
  end if
  if (n_failed > 0) error stop 1

contains

  subroutine ok(cond, name)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: name
    n_run = n_run + 1
    if (cond) then
      print '(a, i0, a, a)', 'ok ', n_run, ' - ', name
    else
      n_failed = n_failed + 1
      print '(a, i0, a, a)', 'not ok ', n_run, ' - ', name
      print '(a, a)', '# last error: ', gpumem_f_last_error()
    end if
  end subroutine ok

  ! A helper given a released array: GPUMEM_ERROR_INVALID_STATE, errmsg starting with `want`
  ! (the helper, the argument's name in it), never naming the internal call that found it.
  subroutine released_is(status, message, want, helper)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: message, want, helper
    logical :: good
    good = status == GPUMEM_ERROR_INVALID_STATE .and. index(message, want) == 1 .and. &
        index(message, 'gpumem_array_') == 0
    call ok(good, helper // ' of a released array: GPUMEM_ERROR_INVALID_STATE, naming the helper and argument')
    if (.not. good) print '(a, a, a, a)', '# got ', gpumem_f_status_string(status), ': ', trim(message)
  end subroutine released_is

  ! a(lower:upper:stride) of a(6), through a device array sliced by gpumem_f_section
  subroutine section_is(lower, upper, stride)
    integer, intent(in) :: lower, upper, stride
    real(c_double), target :: a(6)
    real(c_double), allocatable, target :: got(:)
    type(c_ptr) :: dd, vv
    integer(c_int) :: s1, s2, s3
    character(len=64) :: name
    integer :: k
    a = [(real(k, c_double), k = 1, 6)]
    allocate(got(size(a(lower:upper:stride))))
    got = -1
    s1 = gpumem_f_to_device(ctx, a, dd)
    s2 = gpumem_array_slice(dd, [gpumem_f_section(lower, upper, stride)], 1_c_int, vv)
    s3 = GPUMEM_ERROR_INVALID_VALUE
    if (s2 == GPUMEM_OK) s3 = gpumem_f_copy_to_host(vv, got)
    write (name, '(a, i0, a, i0, a, i0, a)') 'gpumem_f_section(', lower, ', ', upper, ', ', stride, ') is a(l:u:s)'
    call ok(s1 == GPUMEM_OK .and. s2 == GPUMEM_OK .and. s3 == GPUMEM_OK .and. all(got == a(lower:upper:stride)), &
        trim(name))
    if (s2 == GPUMEM_OK) s1 = gpumem_array_release(vv)
    s1 = gpumem_array_release(dd)
  end subroutine section_is

end program test_promises_fortran
