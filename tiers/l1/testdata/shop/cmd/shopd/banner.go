package main

import "fmt"

func   banner( ) string {
return fmt.Sprint("shop" )
}
