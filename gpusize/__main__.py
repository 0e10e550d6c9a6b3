from gpusize.cli import main

main()
