! example.f90: libgpumem from Fortran, through the gpumem module.
!   gfortran $(pkg-config --cflags gpumem-fortran) example.f90 $(pkg-config --libs gpumem-fortran)
!
! It copies a Fortran array to the device, copies a strided section of the
! device array out into a strided section of another Fortran array (one
! strided copy each way, no temporaries), and lets a device pool serve the
! context's arrays.  Fortran arrays are column-major: a(6, 4) is a device
! array of shape [6, 4] in F order, and a(i, j) is its element [i-1, j-1].
program example
  use, intrinsic :: iso_c_binding
  use gpumem
  implicit none
  type(c_ptr) :: ctx, d, rows, pool, tmp
  real(c_double), target :: a(6, 4), out(3, 8)
  type(gpumem_pool_stats_t) :: stats
  integer :: i, round

  call check(gpumem_context_create_default(ctx), 'gpumem_context_create_default')
  a = reshape([(real(i, c_double), i = 1, 24)], [6, 4])   ! a(i, j) = i + 6 (j - 1)

  ! numba's to_device: a device array of shape [6, 4], F order, a copy of a
  call check(gpumem_f_to_device(ctx, a, d), 'gpumem_f_to_device')
  ! d(1:6:2, :) on the device: a view, no copy
  call check(gpumem_array_slice(d, [gpumem_f_section(1, 6, 2)], 1_c_int, rows), 'gpumem_array_slice')
  ! ... copied into every other column of out: out(:, 2:8:2) = a(1:6:2, :)
  out = 0
  call check(gpumem_f_copy_to_host(rows, out(:, 2:8:2)), 'gpumem_f_copy_to_host')
  do i = 1, 3
    print '(a, i0, a, 8f5.0)', 'out(', i, ', :) =', out(i, :)
  end do

  ! A device pool serves the context's arrays: the same size again reuses its block.
  call check(gpumem_pool_create(ctx, 0_c_int, pool), 'gpumem_pool_create')
  call check(gpumem_context_set_pool(ctx, pool), 'gpumem_context_set_pool')
  do round = 1, 3
    call check(gpumem_f_device_array(ctx, [1000, 100], GPUMEM_FLOAT32, tmp), 'gpumem_f_device_array')
    call check(gpumem_array_fill(tmp, real(round, c_float), c_null_ptr), 'gpumem_array_fill')
    call check(gpumem_array_release(tmp), 'gpumem_array_release')
  end do
  stats%size = c_sizeof(stats)
  call check(gpumem_pool_stats(pool, stats), 'gpumem_pool_stats')
  print '(a, i0, a, i0, a)', 'pool: ', stats%misses, ' miss, ', stats%hits, ' hits'
  call check(gpumem_context_set_pool(ctx, c_null_ptr), 'gpumem_context_set_pool')

  call check(gpumem_array_release(rows), 'gpumem_array_release')
  call check(gpumem_array_release(d), 'gpumem_array_release')
  call check(gpumem_pool_destroy(pool), 'gpumem_pool_destroy')
  call check(gpumem_context_release(ctx), 'gpumem_context_release')

contains

  subroutine check(status, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= GPUMEM_OK) then
      write (0, '(a, a, a, a, a)') 'example: ', what, ': ', gpumem_f_status_string(status), ': ' // gpumem_f_last_error()
      error stop 1
    end if
  end subroutine check

end program example
