! test-fortran.f90 - the gpumem module: its interfaces call the C library,
! and its helpers describe Fortran arrays (column-major, sections with their
! strides, ranks 0 to 7, every interoperable type) without a copy, read and
! write elements by Fortran (1-based) indices, make pinned and device arrays
! from a Fortran shape, and name dtypes as Fortran types.  TAP.
! (Every call is a statement of its own: Fortran may evaluate the operands of
! .and. in any order, or not at all.)
! The out-of-memory callback of the memory report's test: counts its calls, declines.
module test_fortran_oom
  use, intrinsic :: iso_c_binding
  use gpumem
  implicit none
contains
  function declines(ctx, info, user) bind(c) result(again)
    type(c_ptr), value :: ctx, user
    type(gpumem_oom_info), intent(in) :: info
    integer(c_int) :: again
    integer(c_int), pointer :: calls
    call c_f_pointer(user, calls)
    if (c_associated(ctx) .and. info%attempt == 1) calls = calls + 1
    again = 0
  end function declines
end module test_fortran_oom

program test_fortran
  use, intrinsic :: iso_c_binding
  use gpumem
  use test_fortran_oom
  implicit none
  integer, parameter :: planned = 80
  integer :: n_run = 0, n_failed = 0
  type(c_ptr) :: ctx, d, h, v, s, pool, dt, hp, a
  integer(c_int) :: st, st2, nd, flag, order
  integer(c_int64_t) :: shp(7), n64
  character(len=256) :: why, msg
  type(gpumem_slice) :: sl
  integer :: i

  st = gpumem_test_context(ctx, why, int(len(why), c_size_t))
  if (st /= GPUMEM_OK) then
    if (gpumem_test_should_skip(st)) then
      print '(a, a)', '1..0 # SKIP ', before_nul(why)
      stop
    end if
    print '(a, a)', 'Bail out! ', before_nul(why)
    error stop 1
  end if
  print '(a, i0)', '1..', planned

  ! ---- strings, constants, errors ----
  call ok(gpumem_f_status_string(GPUMEM_ERROR_OUT_OF_MEMORY) == 'GPUMEM_ERROR_OUT_OF_MEMORY', &
      'gpumem_f_status_string names a status')
  call ok(gpumem_f_string(gpumem_version_string()) /= '', 'gpumem_f_string reads gpumem_version_string()')
  st = gpumem_context_create(1000_c_int, v)
  msg = gpumem_f_last_error()
  call ok(st == GPUMEM_ERROR_INVALID_DEVICE .and. index(msg, '1000') > 0, &
      'a failing call gives its status, and gpumem_f_last_error its message')
  st = gpumem_dtype_from_typestr(gpumem_f_cstr('>i2'), dt)
  call ok(st == GPUMEM_OK, 'gpumem_dtype_from_typestr(gpumem_f_cstr(''>i2''))')
  st = gpumem_dtype_type(dt, order=order)
  call ok(st == GPUMEM_OK .and. order == GPUMEM_BYTEORDER_BIG, 'gpumem_dtype_type with its type argument left out')
  st = gpumem_dtype_release(dt)

  ! ---- a Fortran array in, strided sections out ----
  block
    real(c_double), target :: a2(5, 4), b(3, 2), c(5, 4), e
    a2 = reshape([(real(i, c_double), i = 1, 20)], [5, 4])
    st = gpumem_f_to_device(ctx, a2, d)
    call ok(st == GPUMEM_OK, 'gpumem_f_to_device of a(5, 4)')
    st = gpumem_array_shape(d, shp)
    st2 = gpumem_array_is_f_contiguous(d, flag)
    call ok(all(shp(1:2) == [5, 4]) .and. flag == 1, 'the device array has shape [5, 4], F order')
    st = gpumem_array_get_item(d, [3_c_int64_t, 2_c_int64_t], e, c_null_ptr)
    call ok(st == GPUMEM_OK .and. e == a2(4, 3), 'element [3, 2] is a(4, 3)')
    st = gpumem_array_slice(d, [gpumem_f_section(1, 5, 2), gpumem_f_section(2, 4, 2)], 2_c_int, v)
    b = 0
    st = gpumem_f_copy_to_host(v, b)
    call ok(st == GPUMEM_OK .and. all(b == a2(1:5:2, 2:4:2)), &
        'the device view d(1:5:2, 2:4:2) copied out equals the same Fortran section')
    c = -1
    st = gpumem_f_copy_to_host(v, c(1:5:2, 2:4:2))
    call ok(st == GPUMEM_OK .and. all(c(1:5:2, 2:4:2) == a2(1:5:2, 2:4:2)) .and. count(c == -1) == 14, &
        'copied into a strided section of another array: the gaps untouched')
    msg = ''
    st = gpumem_f_copy_to_host(v, c(1:3, 1:1), errmsg=msg)
    call ok(st == GPUMEM_ERROR_SHAPE_MISMATCH .and. msg /= '' .and. count(c == -1) == 14, &
        'a section of the wrong shape is refused, with the message, nothing written')
    st = gpumem_array_release(v)
    st = gpumem_array_slice(d, [gpumem_f_section(5, 1, -2)], 1_c_int, v)
    st2 = gpumem_array_shape(v, shp)
    call ok(st == GPUMEM_OK .and. shp(1) == 3 .and. shp(2) == 4, 'gpumem_f_section(5, 1, -2) selects 3 rows')
    c = 0
    st = gpumem_f_copy_to_host(v, c(1:3, :))
    call ok(st == GPUMEM_OK .and. all(c(1:3, :) == a2(5:1:-2, :)), 'they are rows 5, 3, 1, in that order')
    st = gpumem_array_release(v)
    ! 1-based element access, counted and checked
    e = 0
    st = gpumem_f_get_item(d, [4, 3], e)
    call ok(st == GPUMEM_OK .and. e == a2(4, 3), 'gpumem_f_get_item(d, [4, 3]) is a(4, 3): Fortran indices')
    st = gpumem_f_set_item(d, [5_c_int64_t, 4_c_int64_t], -7.5_c_double)
    st2 = gpumem_array_get_item(d, [4_c_int64_t, 3_c_int64_t], e, c_null_ptr)
    call ok(st == GPUMEM_OK .and. e == -7.5_c_double, 'gpumem_f_set_item(d, [5, 4]) wrote the last element')
    st = gpumem_f_set_item(d, [5, 4], a2(5, 4))
    msg = ''
    st = gpumem_f_get_item(d, [2], e, errmsg=msg)
    call ok(st == GPUMEM_ERROR_INVALID_VALUE .and. index(msg, '1 indices for an array of 2 dimensions') > 0, &
        'one index for a 2-D array is refused, saying so')
    st = gpumem_f_get_item(d, [0, 1], e, errmsg=msg)
    call ok(st == GPUMEM_ERROR_INDEX_OUT_OF_RANGE .and. index(msg, 'index(1) = 0 is out of range 1:5') > 0, &
        'index 0 is out of range 1:5 (Fortran indices start at 1)')
    st = gpumem_f_get_item(d, [1, 5], e, errmsg=msg)
    call ok(st == GPUMEM_ERROR_INDEX_OUT_OF_RANGE .and. index(msg, 'index(2) = 5 is out of range 1:4') > 0, &
        'index 5 of an extent of 4 is out of range')
    block
      real(c_float) :: f4
      st = gpumem_f_get_item(d, [1, 1], f4, errmsg=msg)
      call ok(st == GPUMEM_ERROR_DTYPE_MISMATCH .and. &
          index(msg, "the array's dtype is real(kind=8), the value's real(kind=4)") > 0, &
          'a value of another type: GPUMEM_ERROR_DTYPE_MISMATCH, both named as Fortran types')
    end block
    ! an integer index drops its axis: d(2, :) as a 1-D view
    sl = gpumem_slice(1_c_int64_t, GPUMEM_SLICE_INDEX, 1_c_int64_t)
    st = gpumem_array_slice(d, [sl], 1_c_int, v)
    st2 = gpumem_array_ndim(v, nd)
    block
      real(c_double), target :: row(4)
      row = 0
      st2 = gpumem_f_copy_to_host(v, row)
      call ok(st == GPUMEM_OK .and. nd == 1 .and. st2 == GPUMEM_OK .and. all(row == a2(2, :)), &
          'a gpumem_slice with stop GPUMEM_SLICE_INDEX: d(2, :) is 1-D, copied into a vector of 4')
    end block
    st = gpumem_array_release(v)
    c = a2 * 2
    st = gpumem_f_copy_to_device(d, c(5:1:-1, 4:1:-1))
    call ok(st == GPUMEM_OK, 'a reversed Fortran section copied in')
    st = gpumem_array_get_item(d, [0_c_int64_t, 0_c_int64_t], e, c_null_ptr)
    call ok(st == GPUMEM_OK .and. e == c(5, 4), 'element [0, 0] is now c(5, 4)')
    st = gpumem_array_release(d)
  end block

  ! ---- every type, ranks 0 to 4, empty arrays ----
  block
    integer(c_int8_t), target :: i1(3, 2, 2), i1b(3, 2, 2)
    integer(c_int16_t), target :: i2(7), i2b(7)
    integer(c_int32_t), target :: i4(2, 2, 2, 2), i4b(2, 2, 2, 2)
    integer(c_int64_t), target :: i8, i8b
    real(c_float), target :: r4(4, 3), r4e(0, 3)
    complex(c_float_complex), target :: c4(2, 3), c4b(2, 3)
    complex(c_double_complex), target :: c8(3), c8b(3)
    logical(c_bool), target :: l1(4), l1b(4)
    i1 = reshape([(int(i, c_int8_t), i = 1, 12)], [3, 2, 2])
    st = gpumem_f_to_device(ctx, i1, d)
    st2 = gpumem_f_copy_to_host(d, i1b)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(i1b == i1), 'integer(c_int8_t), rank 3, round trip')
    st = gpumem_array_release(d)
    i2 = [(int(-i, c_int16_t), i = 1, 7)]
    st = gpumem_f_to_device(ctx, i2, d)
    st2 = gpumem_f_copy_to_host(d, i2b)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(i2b == i2), 'integer(c_int16_t), rank 1, round trip')
    st = gpumem_array_release(d)
    i4 = reshape([(i, i = 1, 16)], [2, 2, 2, 2])
    st = gpumem_f_to_device(ctx, i4, d)
    st2 = gpumem_f_copy_to_host(d, i4b)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(i4b == i4), 'integer(c_int32_t), rank 4, round trip')
    st = gpumem_array_release(d)
    i8 = 1234567890123_c_int64_t
    i8b = 0
    st = gpumem_f_to_device(ctx, i8, d)
    st2 = gpumem_array_ndim(d, nd)
    st2 = gpumem_f_copy_to_host(d, i8b)
    call ok(st == GPUMEM_OK .and. nd == 0 .and. i8b == i8, 'integer(c_int64_t), rank 0 (a scalar), round trip')
    st = gpumem_array_release(d)
    c4 = reshape([(cmplx(i, -i, c_float_complex), i = 1, 6)], [2, 3])
    st = gpumem_f_to_device(ctx, c4, d)
    st2 = gpumem_f_copy_to_host(d, c4b)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(c4b == c4), 'complex(c_float_complex) round trip')
    st = gpumem_array_release(d)
    c8 = [(cmplx(i, 2 * i, c_double_complex), i = 1, 3)]
    st = gpumem_f_to_device(ctx, c8, d)
    st2 = gpumem_f_copy_to_host(d, c8b)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(c8b == c8), 'complex(c_double_complex) round trip')
    st = gpumem_array_release(d)
    l1 = [logical(.true., c_bool), logical(.false., c_bool), logical(.false., c_bool), logical(.true., c_bool)]
    l1b = logical(.false., c_bool)
    st = gpumem_f_to_device(ctx, l1, d)
    st2 = gpumem_f_copy_to_host(d, l1b)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(l1b .eqv. l1), 'logical(c_bool) round trip')
    st = gpumem_array_release(d)
    st = gpumem_f_to_device(ctx, r4e, d)
    st2 = gpumem_array_shape(d, shp)
    call ok(st == GPUMEM_OK .and. shp(1) == 0 .and. shp(2) == 3, 'an empty array (0, 3) goes to the device')
    st = gpumem_array_release(d)
    r4 = 1
    st = gpumem_f_to_device(ctx, r4, d)
    st = gpumem_array_view(d, gpumem_dtype_builtin(GPUMEM_INT32), v)
    st = gpumem_array_release(d)
    msg = ''
    st = gpumem_f_copy_to_host(v, r4, errmsg=msg)
    call ok(st == GPUMEM_ERROR_DTYPE_MISMATCH .and. &
        index(msg, "the array's dtype is integer(kind=4), the Fortran array's real(kind=4)") > 0, &
        'copying int32 into a real array is a dtype mismatch, named in Fortran types')
    st = gpumem_array_release(v)
  end block

  ! ---- Fortran pointers onto host-side arrays ----
  block
    real(c_float), pointer :: p2(:, :) => null(), p1(:) => null()
    integer(c_int32_t), pointer :: q2(:, :) => null()
    real(c_float) :: e
    st = gpumem_pinned_array(ctx, 2_c_int, [3_c_int64_t, 4_c_int64_t], dtype=gpumem_dtype_builtin(GPUMEM_FLOAT32), &
        order='F', array=h)
    call ok(st == GPUMEM_OK, 'gpumem_pinned_array, F order, strides left out (NULL)')
    st = gpumem_f_pointer(h, p2)
    call ok(st == GPUMEM_OK .and. all(shape(p2) == [3, 4]), 'gpumem_f_pointer gives a 3 x 4 pointer')
    p2 = reshape([(real(i, c_float), i = 1, 12)], [3, 4])
    st = gpumem_f_to_device(ctx, p2, d)
    st2 = gpumem_array_get_item(d, [2_c_int64_t, 1_c_int64_t], e, c_null_ptr)
    call ok(st == GPUMEM_OK .and. e == 6.0, 'element [2, 1] is p2(3, 2) = 6, written through the pointer')
    msg = ''
    st = gpumem_f_pointer(h, p1, msg)
    call ok(st == GPUMEM_ERROR_SHAPE_MISMATCH .and. index(msg, '2 dimensions') > 0 .and. .not. associated(p1), &
        'a pointer of the wrong rank: GPUMEM_ERROR_SHAPE_MISMATCH, nullified')
    st = gpumem_f_pointer(h, q2, msg)
    call ok(st == GPUMEM_ERROR_DTYPE_MISMATCH .and. &
        index(msg, "the array's dtype is real(kind=4), the pointer's integer(kind=4)") > 0, &
        'a pointer of the wrong type: GPUMEM_ERROR_DTYPE_MISMATCH, naming both as Fortran types')
    st = gpumem_array_transpose(h, view=v)
    st = gpumem_f_pointer(v, p2, msg)
    call ok(st == GPUMEM_ERROR_COPY_REQUIRED .and. index(msg, 'F-contiguous') > 0, &
        'a C-ordered view: GPUMEM_ERROR_COPY_REQUIRED')
    st = gpumem_array_release(v)
    st = gpumem_f_pointer(d, p2, msg)
    call ok(st == GPUMEM_ERROR_INVALID_VALUE .and. index(msg, 'gpumem_f_pointer: a device array has no host') == 1, &
        'device memory has no Fortran pointer (the C message, naming the helper called)')
    st = gpumem_array_release(d)
    st = gpumem_array_release(h)
  end block

  ! ---- gpumem_array_pack and gpumem_array_unpack: two strided rows through one pinned buffer ----
  block
    real(c_double), target :: a2(5, 4), got(4, 2), back(5, 4)
    type(c_ptr) :: rows(2), swapped(2), buf
    real(c_double), pointer :: pb(:)
    a2 = reshape([(real(i, c_double), i = 1, 20)], [5, 4])
    st = gpumem_f_to_device(ctx, a2, d)
    sl = gpumem_slice(0_c_int64_t, GPUMEM_SLICE_INDEX, 1_c_int64_t) ! d(1, :): strided (F order)
    st = gpumem_array_slice(d, [sl], 1_c_int, rows(1))
    sl = gpumem_slice(4_c_int64_t, GPUMEM_SLICE_INDEX, 1_c_int64_t) ! d(5, :)
    st = gpumem_array_slice(d, [sl], 1_c_int, rows(2))
    st = gpumem_f_pinned_array(ctx, [8_c_int64_t], GPUMEM_FLOAT64, buf)
    st = gpumem_array_pack(2_c_size_t, rows, buf, c_null_ptr)
    st2 = gpumem_f_pointer(buf, pb)
    got = reshape(pb, [4, 2])
    call ok(st == GPUMEM_OK .and. all(got(:, 1) == a2(1, :)) .and. all(got(:, 2) == a2(5, :)), &
        'gpumem_array_pack(2, [d(1, :), d(5, :)], buf): the two rows, one after the other')
    swapped = [rows(2), rows(1)]
    st = gpumem_array_unpack(2_c_size_t, swapped, buf, c_null_ptr)
    st2 = gpumem_f_copy_to_host(d, back)
    call ok(st == GPUMEM_OK .and. all(back(5, :) == a2(1, :)) .and. all(back(1, :) == a2(5, :)) .and. &
        all(back(2:4, :) == a2(2:4, :)), 'gpumem_array_unpack into [d(5, :), d(1, :)] swaps them, the rest untouched')
    st = gpumem_array_release(buf)
    st = gpumem_array_release(rows(1))
    st = gpumem_array_release(rows(2))
    st = gpumem_array_release(d)
  end block

  ! ---- gpumem_f_pinned_array and gpumem_f_device_array from a Fortran shape ----
  block
    real(c_double), pointer :: q(:, :) => null()
    integer(c_int64_t), pointer :: q8(:) => null()
    integer(c_int32_t), target :: src(3, 4)
    integer(c_int32_t) :: back(3, 4)
    integer :: kind_of
    st = gpumem_f_pinned_array(ctx, shape(src), GPUMEM_FLOAT64, h)
    st2 = gpumem_f_pointer(h, q)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(shape(q) == [3, 4]), &
        'gpumem_f_pinned_array(ctx, shape(src), GPUMEM_FLOAT64): a pointer q(3, 4) onto it')
    st = gpumem_array_kind(h, kind_of)
    msg = gpumem_f_string(gpumem_memory_kind_name(kind_of))
    call ok(st == GPUMEM_OK .and. msg == 'pinned', 'it is pinned memory (gpumem_memory_kind_name)')
    st = gpumem_array_release(h)
    st = gpumem_f_pinned_array(ctx, [5_c_int64_t], GPUMEM_INT64, h)
    st2 = gpumem_f_pointer(h, q8)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. size(q8) == 5, 'a shape of kind c_int64_t too')
    st = gpumem_array_release(h)
    st = gpumem_f_pinned_array(ctx, [2, 2], 99_c_int, h, errmsg=msg)
    call ok(st == GPUMEM_ERROR_INVALID_VALUE .and. index(msg, 'gpumem_f_pinned_array') > 0 .and. &
        .not. c_associated(h), 'an unknown type is refused, the output NULL')
    src = reshape([(i, i = 1, 12)], [3, 4])
    st = gpumem_f_device_array(ctx, shape(src), GPUMEM_INT32, d)
    st2 = gpumem_f_copy_to_device(d, src)
    back = 0
    if (st2 == GPUMEM_OK) st2 = gpumem_f_copy_to_host(d, back)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(back == src), &
        'gpumem_f_device_array from a default-integer shape: a round trip')
    st = gpumem_array_release(d)
  end block

  ! ---- streams ----
  block
    real(c_double), target :: x(1000)
    real(c_double), pointer :: px(:) => null()
    st = gpumem_stream_create(ctx, 0_c_int, s)
    call ok(st == GPUMEM_OK, 'gpumem_stream_create')
    x = 1
    st = gpumem_f_to_device(ctx, x, d, stream=s)
    st = gpumem_array_fill(d, 4.0_c_double, s)
    st = gpumem_f_copy_to_host(d, x, s)
    call ok(st == GPUMEM_OK, 'an asynchronous copy into pageable memory is queued')
    st = gpumem_stream_synchronize(s)
    call ok(st == GPUMEM_OK .and. all(x == 4), '...and has landed after the synchronize')
    st = gpumem_pinned_array(ctx, 1_c_int, [1000_c_int64_t], dtype=gpumem_dtype_builtin(GPUMEM_FLOAT64), &
        order='C', array=h)
    st = gpumem_f_pointer(h, px)
    px = 0
    st = gpumem_array_copy(h, d, s)
    st2 = gpumem_stream_synchronize(s)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(px == 4), &
        'fill and copy queued on a stream, then synchronized')
    st = gpumem_array_release(h)
    st = gpumem_array_release(d)
    st = gpumem_stream_destroy(s)
    call ok(st == GPUMEM_OK, 'gpumem_stream_destroy')
  end block

  ! ---- a size as in the environment ----
  st = gpumem_size_parse(gpumem_f_cstr('48K'), n64)
  call ok(st == GPUMEM_OK .and. n64 == 49152, 'gpumem_size_parse(gpumem_f_cstr(''48K'')) is 49152')

  ! ---- events ----
  block
    real(c_double), target :: x(1000)
    type(c_ptr) :: b, e0, e1, nt, d2
    real(c_float) :: ms
    st = gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, s)
    st = gpumem_stream_create(ctx, GPUMEM_STREAM_NON_BLOCKING, b)
    st = gpumem_event_create(ctx, 0_c_int, e0)
    st2 = gpumem_event_create(ctx, GPUMEM_EVENT_BLOCKING_SYNC, e1)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK, 'gpumem_event_create')
    x = 0
    st = gpumem_f_to_device(ctx, x, d)
    st = gpumem_f_to_device(ctx, x, d2)
    st = gpumem_event_record(e0, s)
    st = gpumem_array_fill(d, 8.0_c_double, s)
    st = gpumem_event_record(e1, s)
    st2 = gpumem_stream_wait_event(b, e1)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK, 'gpumem_event_record, gpumem_stream_wait_event')
    st = gpumem_array_copy(d2, d, b)
    st = gpumem_stream_synchronize(b)
    st = gpumem_f_copy_to_host(d2, x)
    call ok(st == GPUMEM_OK .and. all(x == 8), 'stream b waited for the fill on stream a')
    st = gpumem_event_synchronize(e1)
    st2 = gpumem_event_query(e1)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK, 'gpumem_event_synchronize, then gpumem_event_query: complete')
    ms = -1
    st = gpumem_event_elapsed_time(e0, e1, ms)
    call ok(st == GPUMEM_OK .and. ms >= 0, 'gpumem_event_elapsed_time')
    st = gpumem_event_create(ctx, GPUMEM_EVENT_DISABLE_TIMING, nt)
    st = gpumem_event_record(nt, c_null_ptr)
    st = gpumem_event_synchronize(nt)
    st = gpumem_event_elapsed_time(e0, nt, ms)
    msg = gpumem_f_last_error()
    call ok(st == GPUMEM_ERROR_INVALID_VALUE .and. index(msg, 'GPUMEM_EVENT_DISABLE_TIMING') > 0, &
        'an event without timing has no elapsed time')
    st = gpumem_event_destroy(nt)
    st2 = gpumem_event_destroy(nt)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_ERROR_INVALID_STATE, &
        'gpumem_event_destroy, and again: GPUMEM_ERROR_INVALID_STATE')
    st = gpumem_array_release(d2)
    st = gpumem_array_release(d)
    st = gpumem_event_destroy(e1)
    st = gpumem_event_destroy(e0)
    st = gpumem_stream_destroy(b)
    st = gpumem_stream_destroy(s)
  end block

  ! ---- pools and structs ----
  block
    type(gpumem_pool_stats_t) :: stats
    integer(c_int64_t) :: ptr
    integer(c_size_t) :: sz
    real(c_float), pointer :: pf(:, :) => null()
    st = gpumem_pool_create(ctx, 0_c_int, pool)
    call ok(st == GPUMEM_OK, 'gpumem_pool_create')
    st = gpumem_pool_allocate(pool, 4096_c_size_t, c_null_ptr, a)
    st2 = gpumem_allocation_pointer(a, ptr)
    st2 = gpumem_allocation_size(a, sz)
    call ok(st == GPUMEM_OK .and. ptr /= 0 .and. sz == 4096, 'an allocation of 4096 bytes with a device address')
    st = gpumem_allocation_free(a, c_null_ptr)
    st = gpumem_pool_allocate(pool, 4000_c_size_t, c_null_ptr, a)
    st = gpumem_allocation_free(a, c_null_ptr)
    stats%size = c_sizeof(stats)
    st = gpumem_pool_stats(pool, stats)
    call ok(st == GPUMEM_OK .and. stats%hits == 1 .and. stats%misses == 1 .and. stats%held_blocks == 1, &
        'type(gpumem_pool_stats_t): 1 hit, 1 miss, 1 held block')
    st = gpumem_allocation_free(a, c_null_ptr)
    call ok(st == GPUMEM_ERROR_INVALID_STATE, 'a second free is GPUMEM_ERROR_INVALID_STATE')
    st = gpumem_pool_device_array(pool, 2_c_int, [10_c_int64_t, 20_c_int64_t], gpumem_dtype_builtin(GPUMEM_FLOAT32), &
        'F', c_null_ptr, d)
    st2 = gpumem_pool_active_blocks(pool, n64)
    call ok(st == GPUMEM_OK .and. n64 == 1, 'gpumem_pool_device_array: an array on a block of the pool')
    st = gpumem_array_release(d)
    st = gpumem_pool_destroy(pool)
    call ok(st == GPUMEM_OK, 'gpumem_pool_destroy')
    st = gpumem_host_pool_create(ctx, 0_c_int, hp)
    st = gpumem_host_pool_allocate(hp, 2_c_int, [10_c_int64_t, 20_c_int64_t], gpumem_dtype_builtin(GPUMEM_FLOAT32), &
        'F', h)
    st2 = gpumem_f_pointer(h, pf)
    call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK .and. all(shape(pf) == [10, 20]), &
        'a page-locked pool array viewed as pf(10, 20)')
    st = gpumem_host_pool_active_blocks(hp, n64)
    call ok(st == GPUMEM_OK .and. n64 == 1, 'the host pool has one active block')
    st = gpumem_array_release(h)
    st = gpumem_host_pool_active_blocks(hp, n64)
    call ok(st == GPUMEM_OK .and. n64 == 0, 'releasing the array returned its block')
    st = gpumem_host_pool_destroy(hp)
  end block

  ! ---- the memory report and the out-of-memory callback ----
  block
    type(gpumem_memory_report_t) :: before, rep
    type(gpumem_memory_pool_report) :: pr(2)
    integer(c_size_t) :: npools
    integer(c_int), target :: calls
    character(len=1024) :: long
    before%size = c_sizeof(before)
    rep%size = c_sizeof(rep)
    st = gpumem_memory_report(ctx, 0_c_int, before)
    st = gpumem_pool_create(ctx, 0_c_int, pool)
    st = gpumem_pool_allocate(pool, 3000_c_size_t, c_null_ptr, a)
    st = gpumem_memory_report(ctx, GPUMEM_MEMORY_DEVICE_INFO, rep)
    call ok(st == GPUMEM_OK .and. rep%device%bytes - before%device%bytes == 3000 .and. &
        rep%device%count - before%device%count == 1 .and. rep%device_total_bytes > 0, &
        'type(gpumem_memory_report_t): 3000 bytes more in one allocation; the device''s total')
    pr(1)%size = c_sizeof(pr(1))
    pr(2)%size = c_sizeof(pr(2))
    st = gpumem_memory_pools(ctx, 0_c_int, pr, 2_c_size_t, npools)
    call ok(st == GPUMEM_OK .and. npools == 1 .and. c_associated(pr(1)%pool, pool) .and. &
        pr(1)%active_requested_bytes == 3000, 'gpumem_memory_pools: the pool and its allocation')
    st = gpumem_memory_pools(ctx, 0_c_int, capacity=0_c_size_t, count=npools)
    call ok(st == GPUMEM_OK .and. npools == 1, 'gpumem_memory_pools with no array counts them')
    calls = 0
    st = gpumem_context_set_oom_callback(ctx, c_funloc(declines), c_loc(calls))
    st = gpumem_device_array(ctx, 1_c_int, [2_c_int64_t**42], dtype=gpumem_dtype_builtin(GPUMEM_UINT8), &
        order='C', stream=c_null_ptr, array=v)
    long = gpumem_f_last_error()
    call ok(st == GPUMEM_ERROR_OUT_OF_MEMORY .and. calls == 1 .and. index(long, 'cause: ') > 0, &
        'the out-of-memory callback ran once, and the message names the cause')
    st = gpumem_context_set_oom_callback(ctx, c_null_funptr, c_null_ptr)
    st = gpumem_allocation_free(a, c_null_ptr)
    st = gpumem_pool_destroy(pool)
  end block

  ! ---- helpers' own errors ----
  block
    real(c_float), target :: big(1, 1, 1, 1, 1, 1, 1, 2)
    big = 0
    msg = ''
    st = gpumem_f_to_device(ctx, big, d, errmsg=msg)
    call ok(st == GPUMEM_ERROR_NOT_SUPPORTED .and. index(msg, 'rank 0 to 7') > 0 .and. .not. c_associated(d), &
        'a rank-8 array: GPUMEM_ERROR_NOT_SUPPORTED, the output NULL')
  end block
  sl = gpumem_f_section(3, 7)
  call ok(sl%start == 2 .and. sl%stop == 7 .and. sl%step == 1, 'gpumem_f_section(3, 7) is {2, 7, 1}')
  sl = gpumem_f_section(4, 1, -1)
  call ok(sl%start == 3 .and. sl%stop == GPUMEM_SLICE_DEFAULT .and. sl%step == -1, &
      'gpumem_f_section(4, 1, -1) runs down to the first element')

  ! ---- the trace's markers and regions ----
  st = gpumem_trace_mark(gpumem_f_cstr('no trace records'))
  call ok(st == GPUMEM_OK, 'gpumem_trace_mark without a trace does nothing')
  st = gpumem_trace_push(gpumem_f_cstr('solver'))
  st2 = gpumem_trace_pop()
  call ok(st == GPUMEM_OK .and. st2 == GPUMEM_OK, 'gpumem_trace_push and gpumem_trace_pop')
  st = gpumem_trace_pop()
  call ok(st == GPUMEM_ERROR_INVALID_STATE, 'gpumem_trace_pop with no region open')
  st = gpumem_trace_start(gpumem_f_cstr('/nonexistent-gpumem-dir/f.gmt'), GPUMEM_TRACE_CALL_SITES)
  msg = gpumem_f_last_error()
  call ok(st == GPUMEM_ERROR_INVALID_VALUE .and. index(msg, '/nonexistent-gpumem-dir/f.gmt') > 0, &
      'gpumem_trace_start of a file that cannot be made names it')
  st = gpumem_trace_stop()
  call ok(st == GPUMEM_ERROR_INVALID_STATE, 'gpumem_trace_stop with no trace')

  st = gpumem_context_release(ctx)
  call ok(st == GPUMEM_OK, 'gpumem_context_release')
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

  ! The text before the NUL of a buffer C wrote.
  function before_nul(buf) result(s)
    character(len=*), intent(in) :: buf
    character(len=:), allocatable :: s
    integer :: n
    n = index(buf, c_null_char)
    if (n == 0) n = len_trim(buf) + 1
    s = buf(1:n - 1)
  end function before_nul

end program test_fortran
